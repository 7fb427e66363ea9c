package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// stall is a server that answers 200 and then, as stage says, goes silent until the client
// leaves: "held" before any headers, "json" in the middle of a JSON answer, "stream" after a stream's headers, "kept"
// after a line that is no event but reads as an error envelope (go-openai keeps such lines,
// and when the body breaks returns the error they hold instead of the break), "content" after
// a stream's first delta.
func stall(t *testing.T, k kind, stage string) string {
	t.Helper()
	return server(t, func(w http.ResponseWriter, r *http.Request) {
		// Read to its end, the request lets the server notice when the client leaves (its
		// context ends then), also when no answer went out yet.
		_, _ = io.Copy(io.Discard, r.Body)
		switch stage {
		case "held":
			<-r.Context().Done()
			return
		case "json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c","choices":[`)
		case "stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ": connected\n\n")
		case "kept":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "{\"error\":{\"message\":\"upstream hiccup\",\"type\":\"server_error\"}}\n")
		case "content":
			w.Header().Set("Content-Type", "text/event-stream")
			switch {
			case k.isResponses():
				fmt.Fprint(w, respContent)
			case k.isAnthropic():
				fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
			default:
				fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
			}
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}).URL
}

// timedOut asserts that err is the pipeline's own timeout: KindTimeout, matching
// resilience.ErrTimeout, naming the limit that ran out.
func timedOut(t *testing.T, what string, err error, limit resilience.TimeLimit) *providers.Error {
	t.Helper()
	e := asError(t, err)
	var te *resilience.TimeoutError
	if e.Kind != providers.KindTimeout || !errors.Is(err, resilience.ErrTimeout) || !errors.As(err, &te) || te.Limit != limit {
		t.Errorf("%s: %s: %v; want a %s timeout", what, e.Kind, err, limit)
	}
	return e
}

// timeoutPolicy has one short limit, the one under test, and no retries, so that the test
// waits for one expiry: the other limits are far longer than any margin the test allows.
func timeoutPolicy(total, idle float64) resilience.Options {
	o := policy()
	o.RetryCount = 0
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = total, idle
	return o
}

// Rule 7: every time limit of the pipeline that ends a call reads timeout, on every wire,
// wherever it strikes: while a JSON answer is being read (TimeoutSeconds), and while a stream
// waits for its first content or for more after it (StreamIdleTimeoutSeconds). Third-party
// readers between the pipeline and the caller (go-openai's JSON decoder and stream reader,
// steady's own body guards) must not turn it into unavailable.
func TestTimeouts_ReadTimeoutWhereverTheyStrike(t *testing.T) {
	for _, k := range kinds {
		// The total timeout before any answer, for every operation.
		held := stall(t, k, "held")
		c := newClient(t, k, held, timeoutPolicy(0.3, 10), providers.Limits{})
		for _, op := range ops(k) {
			var err error
			within(t, 5*time.Second, k.name+" "+op, func() { err = run(context.Background(), c, op) })
			timedOut(t, k.name+", "+op+", before the answer", err, resilience.TimeoutTotal)
		}

		// The total timeout while a JSON answer is read, for every operation: a stream request
		// answered with JSON (a gateway's error envelope, usually) reads it too.
		body := stall(t, k, "json")
		c = newClient(t, k, body, timeoutPolicy(0.3, 10), providers.Limits{})
		for _, op := range ops(k) {
			var err error
			within(t, 5*time.Second, k.name+" "+op, func() { err = run(context.Background(), c, op) })
			timedOut(t, k.name+", "+op+", reading the answer", err, resilience.TimeoutTotal)
		}

		// The stream-idle timeout before any content: the client's wait for the first content
		// is the far longer TimeoutSeconds.
		for _, stage := range []string{"stream", "kept"} {
			quiet := stall(t, k, stage)
			c = newClient(t, k, quiet, timeoutPolicy(10, 0.3), providers.Limits{})
			var err error
			within(t, 5*time.Second, k.name+" stream", func() { err = run(context.Background(), c, "stream") })
			timedOut(t, k.name+", a silent stream ("+stage+")", err, resilience.TimeoutStreamIdle)
		}

		// The stream-idle timeout after content reached the caller: Partial keeps it.
		mid := stall(t, k, "content")
		c = newClient(t, k, mid, timeoutPolicy(10, 0.3), providers.Limits{})
		st, err := c.ChatStream(context.Background(), ask())
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if d, err := st.Recv(); err != nil || d.Text != "hi" {
			t.Fatalf("%s: first delta %+v %v", k.name, d, err)
		}
		within(t, 5*time.Second, k.name+" mid-stream", func() { _, err = st.Recv() })
		if e := timedOut(t, k.name+", mid-stream", err, resilience.TimeoutStreamIdle); e.Partial != "hi" {
			t.Fatalf("%s, mid-stream: Partial %q, want the text delivered", k.name, e.Partial)
		}
		st.Close()
	}
}

// The caller's own deadline, striking in the same places while the pipeline's limits are far
// away, is still canceled: never the pipeline's timeout, never a failure of the provider.
func TestTimeouts_CallersDeadlineIsNotOurs(t *testing.T) {
	for _, k := range kinds {
		expect := func(what string, err error, c *client.Client) {
			t.Helper()
			canceled(t, k.name+", "+what, err, context.DeadlineExceeded, c)
			if errors.Is(err, resilience.ErrTimeout) {
				t.Fatalf("%s, %s: %v reads as the pipeline's timeout", k.name, what, err)
			}
		}
		body := stall(t, k, "json")
		c := newClient(t, k, body, timeoutPolicy(10, 10), providers.Limits{})
		for _, op := range ops(k) {
			if op == "stream" {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := run(ctx, c, op)
			cancel()
			expect(op+", reading the answer", err, c)
		}

		quiet := stall(t, k, "stream")
		c = newClient(t, k, quiet, timeoutPolicy(10, 10), providers.Limits{})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := run(ctx, c, "stream")
		cancel()
		expect("a silent stream", err, c)

		mid := stall(t, k, "content")
		c = newClient(t, k, mid, timeoutPolicy(10, 10), providers.Limits{})
		ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
		st, err := c.ChatStream(ctx, ask())
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if d, err := st.Recv(); err != nil || d.Text != "hi" {
			t.Fatalf("%s: first delta %+v %v", k.name, d, err)
		}
		_, err = st.Recv()
		cancel()
		expect("mid-stream", err, c)
		st.Close()
	}
}
