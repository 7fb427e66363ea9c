package observe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// A call that one provider gave up on and another served logs no error: the give-up is a
// warning, and the success names the deployment and the model that served, not the model the
// first provider was asked for. The response and the stream say the same.
func TestLogs_AFallbackThatServedNamesWhatServed(t *testing.T) {
	h := newHarness(t)
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	up := mocks.NewServer()
	defer up.Close()
	o := fastPolicy()
	o.RetryCount = 1
	c := newClient(t, openAIProvider("primary", down, o), anthropicProvider("secondary", up, o),
		client.WithModelMap("secondary", map[string]string{"gpt-4o": "claude-sonnet-4-5"}),
		client.WithFallback("primary", "secondary"), client.WithTelemetry(h.tel))
	req := hello()
	req.Model = "gpt-4o"
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "secondary" || resp.Deployment != "secondary" || resp.Model != "claude-sonnet-4-5" {
		t.Fatalf("response names %q %q %q", resp.Provider, resp.Deployment, resp.Model)
	}
	st, err := c.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Provider() != "secondary" || st.Deployment() != "secondary" || st.Model() != "claude-sonnet-4-5" {
		t.Fatalf("stream names %q %q %q", st.Provider(), st.Deployment(), st.Model())
	}
	for range st.Deltas() {
	}
	var served []logRecord
	for _, r := range h.records(t) {
		if r.str("level") == "ERROR" {
			t.Errorf("an error was logged for a call that was served: %v", r)
		}
		if strings.Contains(r.str("msg"), "served by") {
			served = append(served, r)
		}
	}
	if len(served) != 2 {
		t.Fatalf("%d served records", len(served))
	}
	for _, r := range served {
		if !strings.HasPrefix(r.str("msg"), "chat claude-sonnet-4-5 served by secondary in ") ||
			r.str(observe.LogModel) != "claude-sonnet-4-5" || r.str(observe.LogRequestModel) != "gpt-4o" ||
			r.str(observe.LogProvider) != "secondary" {
			t.Errorf("served record %v", r)
		}
	}
	if n := len(withEvent(h.records(t), resilience.EventGaveUp)); n == 0 {
		t.Error("no give-up was logged")
	}
}

// A call that failed everywhere logs one error that names each provider tried with its own
// kind, and attributes the failure to the provider whose failure explains it.
func TestLogs_AFailedChainNamesEachFailureWithItsKind(t *testing.T) {
	h := newHarness(t)
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	broke := mocks.NewServer(mocks.WithScript(mocks.QuotaExceeded().Always()))
	defer broke.Close()
	o := fastPolicy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("primary", down, o), openAIProvider("secondary", broke, o),
		client.WithFallback("primary", "secondary"), client.WithTelemetry(h.tel))
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) != providers.KindOverloaded { // the fake's 503 says "overloaded"
		t.Fatalf("got %v", err)
	}
	var errs []logRecord
	for _, r := range h.records(t) {
		if r.str("level") == "ERROR" {
			errs = append(errs, r)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("%d error records, want one for the call: %v", len(errs), errs)
	}
	r := errs[0]
	if !strings.HasSuffix(r.str("msg"), ": primary overloaded, secondary quota_exhausted") ||
		r.str(observe.LogProvider) != "primary" || r.str(observe.LogOutcome) != "overloaded" {
		t.Fatalf("failure record %v", r)
	}
}
