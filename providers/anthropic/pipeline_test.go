package anthropic_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

// pipelineProvider is a provider over a real resilience pipeline in front of s, retrying
// quickly.
func pipelineProvider(t *testing.T, s *mocks.Server) *anthropic.Provider {
	t.Helper()
	opts := resilience.DefaultOptions()
	opts.RetryBaseDelaySeconds = 0.01
	opts.RetryUseJitter = false
	pl, err := resilience.New(opts, resilience.WithName("anthropic"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{next: pl.Wrap(s.Client().Transport)}
	t.Cleanup(func() { rec.checkClosed(t) })
	p, err := anthropic.New(anthropic.Config{BaseURL: s.AnthropicBaseURL(), APIKey: secretKey, Model: model,
		HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPipeline_OverloadedThenOKSucceedsWithTheSameBody(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Overloaded(), mocks.OK()))
	defer s.Close()
	p := pipelineProvider(t, s)
	resp, err := p.Chat(context.Background(), userRequest("through the pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "through the pipeline" {
		t.Errorf("content %q", resp.Message.Content)
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 2 || reqs[0].Step != "529" || reqs[1].Step != "ok" || !bytes.Equal(reqs[0].Body, reqs[1].Body) {
		t.Fatalf("journal: %d requests %+v", len(reqs), reqs)
	}
}

func TestPipeline_StreamOverloadedThenOKSucceeds(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Overloaded(), mocks.OK()))
	defer s.Close()
	p := pipelineProvider(t, s)
	st, err := p.ChatStream(context.Background(), userRequest("streamed through the pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, d := range deltas {
		text += d.Text
	}
	if text != "streamed through the pipeline" || !deltas[len(deltas)-1].Done || s.Journal().Len() != 2 {
		t.Errorf("text %q, %d requests", text, s.Journal().Len())
	}
}
