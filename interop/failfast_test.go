package interop

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

// sdkCall is one call of an official SDK, with its default retry settings, over an
// *http.Client.
type sdkCall struct {
	name string
	call func(ctx context.Context, s *mocks.Server, hc *http.Client) error
}

var sdkCalls = []sdkCall{
	{"openai-go", func(ctx context.Context, s *mocks.Server, hc *http.Client) error {
		c := openai.NewClient(openaioption.WithBaseURL(s.OpenAIBaseURL()), openaioption.WithAPIKey("sk-test"),
			openaioption.WithHTTPClient(hc)) // default retries: 2
		_, err := c.Chat.Completions.New(ctx, chatParams())
		return err
	}},
	{"anthropic-sdk-go", func(ctx context.Context, s *mocks.Server, hc *http.Client) error {
		c := anthropic.NewClient(anthropicoption.WithBaseURL(s.AnthropicBaseURL()), anthropicoption.WithAPIKey("sk-ant-test"),
			anthropicoption.WithHTTPClient(hc)) // default retries: 2
		_, err := c.Messages.New(ctx, messageParams())
		return err
	}},
}

// rejectionOf finds the pipeline's error behind an SDK's error.
func rejectionOf(err error) error {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return resilience.Rejection(oe.Response)
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return resilience.Rejection(ae.Response)
	}
	return nil
}

// With their default retries, the official SDKs must not undo the pipeline's fail-fast: an
// open circuit, a full bulkhead or the pipeline's own timeout answers at once, without the
// SDK's backoff and without another request.
func TestSDKs_DefaultRetriesDoNotUndoFailFast(t *testing.T) {
	for _, sdk := range sdkCalls {
		t.Run(sdk.name+"/open circuit", func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.Error(500, "api_error", "down").Always()))
			o := resilience.DefaultOptions()
			o.RetryCount, o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 0, 1, 600
			var rejected atomic.Int32
			p, err := resilience.New(o, resilience.WithName("llm"), resilience.OnEvent(func(e resilience.Event) {
				if e.Type == resilience.EventBreakerRejected {
					rejected.Add(1)
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: p.Wrap(s.Client().Transport)}
			_ = sdk.call(context.Background(), s, hc) // one 500 trips the circuit
			if p.CircuitState() != resilience.CircuitOpen {
				t.Fatalf("circuit %v", p.CircuitState())
			}
			before := s.Journal().Len()
			rejected.Store(0)
			err = sdk.call(context.Background(), s, hc)
			if !errors.Is(rejectionOf(err), resilience.ErrCircuitOpen) {
				t.Fatalf("got %v (rejection %v), want the circuit's rejection", err, rejectionOf(err))
			}
			// One rejection, no request: the SDK took the answer as final (each retry it made
			// would have been rejected again, after its own backoff).
			if n := rejected.Load(); n != 1 || s.Journal().Len() != before {
				t.Fatalf("%d rejections and %d requests: the SDK retried", n, s.Journal().Len()-before)
			}
		})
		t.Run(sdk.name+"/our timeout", func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.Stall().Always()))
			o := resilience.DefaultOptions()
			o.RetryCount, o.TimeoutSeconds = 0, 0.1
			p, err := resilience.New(o)
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: p.Wrap(s.Client().Transport)}
			err = sdk.call(context.Background(), s, hc)
			if !errors.Is(rejectionOf(err), resilience.ErrTimeout) {
				t.Fatalf("got %v, want the pipeline's timeout", err)
			}
			if n := s.Journal().Len(); n != 1 {
				t.Fatalf("%d requests: the SDK retried the pipeline's timeout", n)
			}
		})
		t.Run(sdk.name+"/full bulkhead", func(t *testing.T) {
			s := newServer(t, mocks.WithScript(mocks.Stall(), mocks.Reply("x").Always()))
			o := resilience.DefaultOptions()
			o.RetryCount, o.BulkheadMaxConcurrency, o.BulkheadMaxQueue = 0, 1, 0
			var rejected atomic.Int32
			p, err := resilience.New(o, resilience.OnEvent(func(e resilience.Event) {
				if e.Type == resilience.EventBulkheadRejected {
					rejected.Add(1)
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: p.Wrap(s.Client().Transport)}
			ctx, cancel := context.WithCancel(context.Background())
			held := make(chan error, 1)
			go func() { held <- sdk.call(ctx, s, hc) }() // holds the only slot
			for s.Journal().Len() == 0 {
				time.Sleep(time.Millisecond)
			}
			err = sdk.call(context.Background(), s, hc)
			if !errors.Is(rejectionOf(err), resilience.ErrBulkheadRejected) || s.Journal().Len() != 1 || rejected.Load() != 1 {
				t.Fatalf("got %v with %d requests and %d rejections, want one rejection and no request", err,
					s.Journal().Len()-1, rejected.Load())
			}
			cancel()
			<-held
		})
	}
}
