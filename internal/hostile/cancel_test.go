package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// canceled asserts that err is the caller's own cancellation (want: context.Canceled or
// context.DeadlineExceeded) and that the provider's circuit did not count it.
func canceled(t *testing.T, what string, err error, want error, c *client.Client) {
	t.Helper()
	e := asError(t, err)
	if e.Kind != providers.KindCanceled || !errors.Is(err, want) {
		t.Fatalf("%s: %s: %v; want canceled matching %v", what, e.Kind, err, want)
	}
	if info := c.Pipeline("p").CircuitInfo(); info.ConsecutiveFailures != 0 {
		t.Fatalf("%s: the caller's cancellation counted as %d failures of the provider", what, info.ConsecutiveFailures)
	}
}

// Rule 6: the caller's own deadline or cancellation is canceled wherever it strikes, never
// unavailable, timeout or bulkhead_full, and never a failure of the provider.
func TestCancel_IsCanceledWhereverItStrikes(t *testing.T) {
	for _, k := range kinds {
		for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
			end := func(start <-chan struct{}) context.Context { return endOn(start, cause) }
			name := fmt.Sprintf("%s, %v", k.name, cause)

			// Before any response: the server holds the request.
			arrived := make(chan struct{}, 8)
			hold := make(chan struct{})
			srv := server(t, func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
				case <-hold:
				}
			})
			c := newClient(t, k, srv.URL, policy(), providers.Limits{})
			canceled(t, name+", before the response", run(end(arrived), c, "chat"), cause, c)

			// Queued in the bulkhead behind a call that holds the only slot.
			o := policy()
			o.BulkheadMaxConcurrency, o.BulkheadMaxQueue = 1, 10
			cq := newClient(t, k, srv.URL, o, providers.Limits{})
			first := make(chan error, 1)
			go func() { first <- run(context.Background(), cq, "chat") }()
			<-arrived
			queued := make(chan struct{})
			go func() { time.Sleep(100 * time.Millisecond); close(queued) }() // time to join the queue
			canceled(t, name+", queued in the bulkhead", run(end(queued), cq, "chat"), cause, cq)
			close(hold)
			<-first

			// Mid-backoff: the server asks for two seconds, the caller leaves at once.
			rl := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(503)
			})
			o = policy()
			o.RetryMaxDelaySeconds = 5
			sleeping := make(chan struct{}, 1)
			cb := newClient(t, k, rl.URL, o, providers.Limits{}, client.WithObserver(func(e resilience.Event) {
				if e.Type == resilience.EventRetryScheduled {
					sleeping <- struct{}{}
				}
			}))
			canceled(t, name+", mid-backoff", run(end(sleeping), cb, "chat"), cause, cb)

			// While the JSON answer is being read.
			stall := make(chan struct{})
			body := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"c","choices":[`)
				w.(http.Flusher).Flush()
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
				case <-stall:
				}
			})
			cr := newClient(t, k, body.URL, policy(), providers.Limits{})
			canceled(t, name+", reading the answer", run(end(arrived), cr, "chat"), cause, cr)

			// Mid-stream, after content reached the caller.
			ms := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				switch {
				case k.isResponses():
					fmt.Fprint(w, respContent)
				case k.isAnthropic():
					fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
				default:
					fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-stall:
				}
			})
			cs := newClient(t, k, ms.URL, policy(), providers.Limits{})
			gotContent := make(chan struct{})
			ctx := end(gotContent)
			st, err := cs.ChatStream(ctx, ask())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			d, err := st.Recv()
			if err != nil || d.Text != "hi" {
				t.Fatalf("%s: first delta %+v %v", name, d, err)
			}
			close(gotContent)
			_, err = st.Recv()
			canceled(t, name+", mid-stream", err, cause, cs)
			st.Close()
			close(stall)
		}
	}
}

// trigger is a caller's context that ends with err once start is closed: the caller's
// cancellation, or its deadline passing, exactly when the test wants it to strike.
type trigger struct {
	context.Context
	done chan struct{}
	err  error
}

func endOn(start <-chan struct{}, err error) context.Context {
	c := &trigger{Context: context.Background(), done: make(chan struct{}), err: err}
	go func() { <-start; close(c.done) }()
	return c
}

func (c *trigger) Done() <-chan struct{} { return c.done }

func (c *trigger) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}
