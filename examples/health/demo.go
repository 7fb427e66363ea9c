package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// runDemo plays the scenario against a real server on an ephemeral 127.0.0.1 port and
// prints every exchange to out: a call succeeds and /readyz passes; threshold failing calls
// open the circuit, /chat is refused at once and /readyz fails with 503 while /livez still
// passes; the break elapses and /readyz warns (half-open) with no call in between; a
// successful probe closes the circuit again.
func runDemo(ctx context.Context, out io.Writer, threshold int, brk time.Duration) error {
	a, err := newApp(threshold, brk)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := listenLoopback("127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := newServer(a.routes())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	d := demo{ctx: ctx, out: out, base: "http://" + ln.Addr().String(), client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}

	d.say("1. The provider answers: the circuit is closed and readiness passes.")
	d.get("/chat?q=hello")
	d.get("/readyz")

	d.say(fmt.Sprintf("2. The provider fails %d times in a row: the circuit opens.", threshold))
	for range threshold {
		d.get("/chat?fail=1")
	}
	d.get("/chat?q=hello") // refused at once, no upstream call
	d.get("/readyz")
	d.get("/livez")

	d.say("3. No traffic. Once the break has elapsed, readiness warns: half-open.")
	deadline := time.Now().Add(brk + 10*time.Second)
	for d.err == nil && a.pipeline.CircuitState() != resilience.CircuitHalfOpen {
		if time.Now().After(deadline) {
			return fmt.Errorf("circuit still %s after the break", a.pipeline.CircuitState())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	d.get("/readyz")

	d.say("4. The next call is the probe; it succeeds and closes the circuit.")
	d.get("/chat?q=hello+again")
	d.get("/readyz")
	return d.err
}

// demo performs and prints the scenario's requests, keeping the first error.
type demo struct {
	ctx    context.Context
	out    io.Writer
	base   string
	client *http.Client
	err    error
}

func (d *demo) say(s string) {
	if d.err == nil {
		_, d.err = fmt.Fprintf(d.out, "\n# %s\n", s)
	}
}

// get prints the request line, then the status line, selected headers and body.
func (d *demo) get(path string) {
	if d.err != nil {
		return
	}
	req, err := http.NewRequestWithContext(d.ctx, http.MethodGet, d.base+path, nil)
	if err != nil {
		d.err = err
		return
	}
	resp, err := d.client.Do(req)
	if err != nil {
		d.err = err
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		d.err = err
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "> GET %s\n%s %s\n", path, resp.Proto, resp.Status)
	for _, h := range []string{"Content-Type", "Cache-Control", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	fmt.Fprintf(&b, "\n%s", body)
	_, d.err = io.WriteString(d.out, b.String())
}
