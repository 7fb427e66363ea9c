package mocks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Outage is a window of time during which every matching request gets Step instead of its
// normal answer: a primary that goes down and comes back, on the server's clock ([WithClock],
// else the wall clock), so that a test of failover and recovery moves a clock instead of
// sleeping. Outside the window the normal choice of step applies, and no script was consumed
// by the outage. Add outages with [WithOutage], [Server.Outages] or a scenario file's
// "outages".
type Outage struct {
	// Start is when the outage begins, as an offset from the server's start (the clock's
	// reading when NewServer ran). 0 means at once; a negative offset began before the start.
	Start time.Duration
	// At, when not zero, is when the outage begins by the server's clock, and Start is ignored.
	At time.Time
	// Duration is how long the outage lasts, from its beginning included to its end excluded.
	// It must be positive: NewServer and Server.Outages panic otherwise, and a scenario file
	// saying so is refused. For an outage that never ends, give a duration longer than the run.
	Duration time.Duration
	// Step answers every matching request in the window (Status(503), Stall(), CutStream(2),
	// …); its Repeat and Forever are ignored, as every matching request gets it. The zero Step
	// is a normal reply, which holds the request's scripts back for the window.
	Step Step
	// Model, when set, limits the outage to requests for that model: the body's "model"
	// (OpenAI, Anthropic), or the deployment of an Azure path. "" matches every request.
	Model string
	// Route, when set, limits the outage to one route (one of Routes, such as RouteMessages);
	// NewServer and Server.Outages panic for another. "" matches every route, GET /v1/models
	// included. With Model, both must match.
	Route string
}

// outageWindow is an Outage resolved against the server's start.
type outageWindow struct {
	from, until  time.Time
	step         Step
	model, route string
}

// matches reports whether the outage is in force for the call sel describes.
func (o outageWindow) matches(sel selector) bool {
	return !sel.now.Before(o.from) && sel.now.Before(o.until) &&
		(o.model == "" || o.model == sel.model) && (o.route == "" || o.route == sel.route)
}

// WithOutage schedules outages (see [Outage]), after those of earlier WithOutage options; when
// several are in force for one request, the first scheduled wins. At most [MaxOutages] in all:
// NewServer panics beyond, or for an outage with a non-positive Duration or an unknown Route.
func WithOutage(outages ...Outage) Option {
	return func(o *options) { o.outages = append(o.outages, outages...) }
}

// Outages replaces the server's outages with outages, their Start still counted from the
// server's start (see [WithOutage]); no argument clears them. It panics as WithOutage does.
func (s *Server) Outages(outages ...Outage) {
	windows := s.outageWindows(outages)
	s.script.mu.Lock()
	defer s.script.mu.Unlock()
	s.script.outages = windows
}

// outageWindows checks outages and resolves them against the server's start.
func (s *Server) outageWindows(outages []Outage) []outageWindow {
	if len(outages) > MaxOutages {
		panic(fmt.Sprintf("mocks: %d outages, more than %d", len(outages), MaxOutages))
	}
	var windows []outageWindow
	for i, o := range outages {
		if err := o.validate(); err != nil {
			panic(fmt.Sprintf("mocks: outage %d: %v", i, err))
		}
		from := o.At
		if from.IsZero() {
			from = s.started.Add(o.Start)
		}
		windows = append(windows, outageWindow{from: from, until: from.Add(o.Duration), step: o.Step,
			model: o.Model, route: o.Route})
	}
	return windows
}

// validate reports what is wrong with o's window and route (a scenario file's step is checked
// as every step of the file is; from Go, a step is taken as given, as in a script).
func (o Outage) validate() error {
	var errs []error
	if o.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v is not positive", o.Duration))
	}
	if o.Route != "" && !validRoute(o.Route) {
		errs = append(errs, fmt.Errorf("route %q is none of %v", o.Route, Routes))
	}
	return errors.Join(errs...)
}

// outageJSON is the scenario file form of an Outage (durations in milliseconds, "at" in RFC
// 3339).
type outageJSON struct {
	StartMs    float64    `json:"startMs,omitempty"`
	At         *time.Time `json:"at,omitempty"`
	DurationMs float64    `json:"durationMs"`
	Step       Step       `json:"step"`
	Model      string     `json:"model,omitempty"`
	Route      string     `json:"route,omitempty"`
}

// MarshalJSON writes o in the scenario file format (see [Config]).
func (o Outage) MarshalJSON() ([]byte, error) {
	w := outageJSON{StartMs: toMs(o.Start), DurationMs: toMs(o.Duration), Step: o.Step, Model: o.Model, Route: o.Route}
	if !o.At.IsZero() {
		w.At = &o.At
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an outage in the scenario file format; unknown keys are errors, and so
// is an outage giving both startMs and at.
func (o *Outage) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w outageJSON
	if err := dec.Decode(&w); err != nil {
		return err
	}
	if w.At != nil && w.StartMs != 0 {
		return errors.New("outage gives both startMs and at")
	}
	*o = Outage{Start: ms(w.StartMs), Duration: ms(w.DurationMs), Step: w.Step, Model: w.Model, Route: w.Route}
	if w.At != nil {
		o.At = *w.At
	}
	return nil
}
