package mocks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// The requests of the admin API that change something: each reads its JSON body, checks every
// value and either changes nothing (returning the problems) or makes its change whole.

// lastParam reads ?last=, the number of requests GET /_fake/journal lists (default 100).
func lastParam(q url.Values) (int, *Problem) {
	v := q.Get("last")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > MaxAdminJournal {
		return 0, &Problem{Field: "last", Value: clip(v, 64), Allowed: fmt.Sprintf("is not a whole number in [0, %d]", MaxAdminJournal)}
	}
	return n, nil
}

// decodeStrict decodes data into v, refusing unknown keys, and returns what was wrong as
// problems whose fields are named after prefix; keys lists the keys v accepts, for the
// message about an unknown one.
func decodeStrict(data []byte, v any, prefix, keys string) []Problem {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return []Problem{{Field: strings.TrimSuffix(prefix, "."), Allowed: "has data after its JSON value"}}
		}
		return nil
	}
	return []Problem{jsonProblem(err, prefix, keys)}
}

// jsonProblem turns a decoding error into a problem naming the field.
func jsonProblem(err error, prefix, keys string) Problem {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = strings.TrimSuffix(prefix, ".")
		} else {
			field = prefix + field
		}
		return Problem{Field: field, Value: te.Value, Allowed: "is not " + jsonKind(te.Type.String())}
	case errors.As(err, &se):
		return Problem{Field: strings.TrimSuffix(prefix, "."), Allowed: fmt.Sprintf("is not valid JSON (at byte %d)", se.Offset)}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return Problem{Field: prefix + clip(name, maxScenarioName), Allowed: "is not a key here (keys: " + keys + ")"}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Problem{Field: strings.TrimSuffix(prefix, "."), Allowed: "is cut short (not valid JSON)"}
	}
	return Problem{Field: strings.TrimSuffix(prefix, "."), Allowed: clip(msg, 256)}
}

// jsonKind names a Go type as JSON users know it.
func jsonKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "struct") || strings.HasPrefix(t, "mocks."):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	}
	return "a " + t
}

// name is a setting's target as a request gives it: a route, a model or a key.
type target struct {
	Route *string `json:"route"`
	Model *string `json:"model"`
	Key   *string `json:"key"`
}

// check reports what is wrong with t for a setting that takes the targets allowed ("route",
// "model", "key"): more than one, an unknown route, an empty or overlong name. A key is never
// repeated.
func (t target) check(allowed ...string) []Problem {
	var out []Problem
	given := 0
	for _, f := range []struct {
		name string
		v    *string
	}{{"route", t.Route}, {"model", t.Model}, {"key", t.Key}} {
		if f.v == nil {
			continue
		}
		given++
		ok := false
		for _, a := range allowed {
			ok = ok || a == f.name
		}
		switch {
		case !ok:
			out = append(out, Problem{Field: f.name, Allowed: "cannot be set here (give " + strings.Join(allowed, " or ") + ")"})
		case f.name == "route" && !validRoute(*f.v):
			out = append(out, Problem{Field: "route", Value: clip(*f.v, maxScenarioName), Allowed: fmt.Sprintf("is none of %v", Routes)})
		case *f.v == "":
			out = append(out, Problem{Field: f.name, Value: "", Allowed: "is empty"})
		case len(*f.v) > maxTargetName:
			v := any(clip(*f.v, maxScenarioName))
			if f.name == "key" {
				v = nil
			}
			out = append(out, Problem{Field: f.name, Value: v, Allowed: fmt.Sprintf("is longer than %d bytes", maxTargetName)})
		}
	}
	if given > 1 {
		out = append(out, Problem{Field: "route", Allowed: "and model or key given together: give one (or none, for every request)"})
	}
	return out
}

// maxTargetName bounds a model name or key given to the admin API.
const maxTargetName = 4096

// problemsOf turns problems into values.
func problemsOf(ps []*Problem) []Problem {
	out := make([]Problem, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

// setterProblem reports the error of a setter that refused a valid-looking value (a bound on
// the number of models or keys) against field.
func setterProblem(field string, err error) []Problem {
	if err == nil {
		return nil
	}
	return []Problem{{Field: field, Allowed: strings.TrimPrefix(err.Error(), "mocks: ")}}
}

func (s *Server) adminScript(body []byte) []Problem {
	var req struct {
		target
		Steps []json.RawMessage `json:"steps"`
	}
	if ps := decodeStrict(body, &req, "", "route, model, steps"); ps != nil {
		return ps
	}
	ps := req.check("route", "model")
	switch {
	case req.Steps == nil:
		ps = append(ps, Problem{Field: "steps", Allowed: "is missing: give a list of steps ([] for none)"})
	case len(req.Steps) > MaxAdminSteps:
		ps = append(ps, Problem{Field: "steps", Value: len(req.Steps), Allowed: fmt.Sprintf("steps are more than %d", MaxAdminSteps)})
	}
	steps := make([]Step, 0, len(req.Steps))
	for i, raw := range req.Steps {
		if len(ps) > 100 {
			break // enough to fix first
		}
		prefix := fmt.Sprintf("steps[%d].", i)
		var st Step
		if err := json.Unmarshal(raw, &st); err != nil {
			ps = append(ps, jsonProblem(err, prefix, "see mocks.Config"))
			continue
		}
		ps = append(ps, problemsOf(st.problems(prefix))...)
		steps = append(steps, st)
	}
	if len(ps) > 0 {
		return ps
	}
	switch {
	case req.Route != nil:
		s.script.setRoute(*req.Route, steps)
	case req.Model != nil:
		return setterProblem("model", s.script.setModel(*req.Model, steps))
	default:
		s.script.setDefault(steps)
	}
	return nil
}

func (s *Server) adminLatency(body []byte) []Problem {
	var req struct {
		target
		Profile json.RawMessage `json:"profile"`
	}
	if ps := decodeStrict(body, &req, "", "route, model, key, profile"); ps != nil {
		return ps
	}
	ps := req.check("route", "model", "key")
	var p LatencyProfile
	if len(req.Profile) > 0 && string(req.Profile) != "null" {
		if err := json.Unmarshal(req.Profile, &p); err != nil {
			return append(ps, jsonProblem(err, "profile.", "firstTokenMs, jitterMs, spread, stragglerRate, stragglerEvery, stragglerMs, chunkDelayMs, headersFirst, seed"))
		}
		ps = append(ps, problemsOf(p.problems("profile."))...)
	}
	if len(ps) > 0 {
		return ps
	}
	switch {
	case req.Route != nil:
		return setterProblem("route", s.RouteLatency(*req.Route, p))
	case req.Model != nil:
		return setterProblem("model", s.ModelLatency(*req.Model, p))
	case req.Key != nil:
		return setterProblem("key", s.KeyLatency(*req.Key, p))
	}
	return setterProblem("profile", s.Latency(p))
}

func (s *Server) adminRateLimits(body []byte) []Problem {
	var req struct {
		target
		Limits json.RawMessage `json:"limits"`
	}
	if ps := decodeStrict(body, &req, "", "route, key, limits"); ps != nil {
		return ps
	}
	ps := req.check("route", "key")
	var l *RateLimits
	if len(req.Limits) > 0 && string(req.Limits) != "null" {
		l = new(RateLimits)
		if lp := decodeStrict(req.Limits, l, "limits.", "requestsPerMinute, tokensPerMinute, minuteMs"); lp != nil {
			return append(ps, lp...)
		}
		ps = append(ps, problemsOf(l.problems("limits."))...)
	}
	if len(ps) > 0 {
		return ps
	}
	switch {
	case req.Route != nil:
		return setterProblem("route", s.RouteRateLimits(*req.Route, l))
	case req.Key != nil:
		return setterProblem("key", s.KeyRateLimits(*req.Key, l))
	}
	return setterProblem("limits", s.RateLimits(l))
}

func (s *Server) adminConcurrency(body []byte) []Problem {
	var req struct {
		target
		Max          *int `json:"max"`
		OpenAIStatus *int `json:"openAIStatus"`
	}
	if ps := decodeStrict(body, &req, "", "route, max, openAIStatus"); ps != nil {
		return ps
	}
	ps := req.check("route")
	l := ConcurrencyLimit{}
	if req.Max == nil {
		ps = append(ps, Problem{Field: "max", Allowed: fmt.Sprintf("is missing: give the calls served at once, in [0, %d] (0: no limit)", MaxConcurrencyLimit)})
	} else {
		l.Max = *req.Max
	}
	if req.OpenAIStatus != nil {
		if req.Route != nil {
			ps = append(ps, Problem{Field: "openAIStatus", Value: *req.OpenAIStatus, Allowed: "is the server's, not a route's: give it without route"})
		}
		l.OpenAIStatus = *req.OpenAIStatus
	}
	ps = append(ps, problemsOf(l.problems(""))...)
	if len(ps) > 0 {
		return ps
	}
	if req.Route != nil {
		return setterProblem("route", s.SetRouteConcurrencyLimit(*req.Route, l.Max))
	}
	s.conc.change(func(cl *concLimits) {
		cl.max = int64(l.Max)
		if req.OpenAIStatus != nil {
			cl.openAIStatus = overloadStatus(l.OpenAIStatus)
		}
	})
	return nil
}

func (s *Server) adminReset(body []byte) []Problem {
	var req target
	if ps := decodeStrict(body, &req, "", "route"); ps != nil {
		return ps
	}
	if ps := req.check("route"); len(ps) > 0 {
		return ps
	}
	if req.Route != nil {
		return setterProblem("route", s.ResetRoute(*req.Route))
	}
	s.Reset()
	return nil
}
