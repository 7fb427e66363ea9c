package mocks_test

import (
	"net/http"
	"testing"
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
