package mocks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// A background response is answered queued, then read back in progress, then completed; the
// same on Azure's path.
func TestBackground_ReadBackInSteps(t *testing.T) {
	for _, base := range []string{"/v1/responses", "/openai/v1/responses"} {
		s := newServer(t)
		res, b := mustDo(t, s, http.MethodPost, base, openAIHeaders(), `{"model":"m","background":true,"input":"Say hello"}`)
		v := decode(t, b)
		if res.StatusCode != http.StatusOK || path(v, "status") != "queued" || path(v, "background") != true {
			t.Fatalf("%s: %d %s", base, res.StatusCode, b)
		}
		id := path(v, "id").(string)
		for _, want := range []string{"in_progress", "completed", "completed"} {
			_, b = mustDo(t, s, http.MethodGet, base+"/"+id, openAIHeaders(), "")
			if v = decode(t, b); path(v, "status") != want {
				t.Fatalf("%s: want %s: %s", base, want, b)
			}
		}
		if path(v, "output", 0, "content", 0, "text") != "Say hello" {
			t.Fatalf("%s: %s", base, b)
		}
	}
}

// A cancel before completion leaves the response cancelled for good; an unknown ID is a 404.
func TestBackground_CancelAndUnknown(t *testing.T) {
	s := newServer(t)
	_, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","background":true,"input":"hi"}`)
	id := path(decode(t, b), "id").(string)
	for _, op := range []struct{ method, suffix string }{
		{http.MethodPost, "/cancel"}, {http.MethodGet, ""}, {http.MethodPost, "/cancel"}, {http.MethodGet, ""}, {http.MethodGet, ""},
	} {
		_, b = mustDo(t, s, op.method, "/v1/responses/"+id+op.suffix, openAIHeaders(), "")
		if v := decode(t, b); path(v, "status") != "cancelled" || len(path(v, "output").([]any)) != 0 {
			t.Fatalf("%s %s: %s", op.method, op.suffix, b)
		}
	}
	res, b := mustDo(t, s, http.MethodGet, "/v1/responses/resp_nope", openAIHeaders(), "")
	if res.StatusCode != http.StatusNotFound || path(decode(t, b), "error", "param") != "response_id" {
		t.Fatalf("unknown: %d %s", res.StatusCode, b)
	}
}

// A background stream cut by its step is kept whole: a read with starting_after serves every
// event after that one, numbered on from it.
func TestBackground_StreamResumesAfterAnEvent(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Step{Text: "one two three four five", Cut: mocks.CutClean, CutAfter: 3}))
	_, evs, _ := stream(t, s, "/v1/responses", openAIHeaders(), `{"model":"m","background":true,"stream":true,"input":"count"}`)
	if len(evs) != 3 {
		t.Fatalf("%d events before the cut", len(evs))
	}
	id := path(decode(t, []byte(evs[0].data)), "response", "id").(string)
	res, err := do(t, context.Background(), s, http.MethodGet, "/v1/responses/"+id+"?stream=true&starting_after=2", openAIHeaders(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rest, err := readEvents(res.Body)
	if err != nil || len(rest) == 0 {
		t.Fatalf("%v %d", err, len(rest))
	}
	for i, e := range rest {
		if seq := path(decode(t, []byte(e.data)), "sequence_number"); seq != float64(3+i) {
			t.Fatalf("event %d: sequence_number %v", i, seq)
		}
	}
	if last := decode(t, []byte(rest[len(rest)-1].data)); path(last, "type") != "response.completed" {
		t.Fatalf("last %v", last)
	}
}

// A step with Expire makes its background answer gone once it answered: reads, cancels and
// resumes are 404s, a previous_response_id naming it is refused; Forget does the same to any
// stored answer. Expire survives the scenario file format.
func TestBackground_ExpiredAnswersAreGone(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Step{Expire: true}, mocks.Step{Text: "one two three", Cut: mocks.CutClean, CutAfter: 3, Expire: true}))
	_, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","background":true,"input":"hi"}`)
	id := path(decode(t, b), "id").(string)
	for _, op := range []struct{ method, suffix string }{{http.MethodGet, ""}, {http.MethodPost, "/cancel"}} {
		if res, b := mustDo(t, s, op.method, "/v1/responses/"+id+op.suffix, openAIHeaders(), ""); res.StatusCode != http.StatusNotFound {
			t.Fatalf("%s %s: %d %s", op.method, op.suffix, res.StatusCode, b)
		}
	}
	res, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","previous_response_id":"`+id+`","input":"and?"}`)
	if res.StatusCode != http.StatusBadRequest || path(decode(t, b), "error", "param") != "previous_response_id" {
		t.Fatalf("previous: %d %s", res.StatusCode, b)
	}

	_, evs, _ := stream(t, s, "/v1/responses", openAIHeaders(), `{"model":"m","background":true,"stream":true,"input":"count"}`)
	id = path(decode(t, []byte(evs[0].data)), "response", "id").(string)
	if res, b := mustDo(t, s, http.MethodGet, "/v1/responses/"+id+"?stream=true&starting_after=2", openAIHeaders(), ""); res.StatusCode != http.StatusNotFound {
		t.Fatalf("resume: %d %s", res.StatusCode, b)
	}

	_, b = mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","input":"kept"}`)
	id = path(decode(t, b), "id").(string)
	if !s.Forget(id) || s.Forget(id) {
		t.Fatal("Forget did not report what it held")
	}
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","previous_response_id":"`+id+`","input":"and?"}`); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("previous after Forget: %d", res.StatusCode)
	}

	var st mocks.Step
	if data, err := json.Marshal(mocks.Step{Expire: true}); err != nil || json.Unmarshal(data, &st) != nil || !st.Expire ||
		!strings.Contains(string(data), `"expire":true`) || !strings.Contains(st.String(), "expire") {
		t.Fatalf("%s %+v", data, st)
	}
}

// A script given for the stored-answer route fails its reads (a 429 with its hint) or adds
// headers to them; the default sequence does not reach them.
func TestBackground_StoredReadsFollowTheirRouteScript(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(500).Always()),
		mocks.WithRouteScript(mocks.RouteResponses, mocks.OK()),
		mocks.WithRouteScript(mocks.RouteStoredResponses, mocks.RateLimited(3*time.Second), mocks.Step{RetryAfter: 5 * time.Second}))
	_, b := mustDo(t, s, http.MethodPost, "/v1/responses", openAIHeaders(), `{"model":"m","background":true,"input":"hi"}`)
	id := path(decode(t, b), "id").(string)
	res, b := mustDo(t, s, http.MethodGet, "/v1/responses/"+id, openAIHeaders(), "")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "3" {
		t.Fatalf("first read: %d %v %s", res.StatusCode, res.Header, b)
	}
	res, b = mustDo(t, s, http.MethodGet, "/v1/responses/"+id, openAIHeaders(), "")
	if res.StatusCode != http.StatusOK || res.Header.Get("Retry-After") != "5" || path(decode(t, b), "status") != "in_progress" {
		t.Fatalf("second read: %d %v %s", res.StatusCode, res.Header, b)
	}
	res, b = mustDo(t, s, http.MethodGet, "/v1/responses/"+id, openAIHeaders(), "")
	if res.StatusCode != http.StatusOK || res.Header.Get("Retry-After") != "" || path(decode(t, b), "status") != "completed" {
		t.Fatalf("third read: %d %v %s", res.StatusCode, res.Header, b)
	}
}
