// Command health serves an LLM-backed endpoint next to readiness and liveness probes, to
// show the health package at work:
//
//	/chat    calls an upstream LLM through a resilience pipeline (?fail=1 makes the
//	         upstream answer 503 for that call, ?q= sets the prompt)
//	/readyz  the health checker: application/health+json, 503 while the circuit is open
//	/livez   liveness: always 200, whatever the provider does
//	/debug/steady  the live status page (package statuspage): open it in a browser and
//	         watch the circuit open and close as the calls fail
//
// The upstream is steady's fake LLM server (package mocks) started in-process on 127.0.0.1, so
// no API key or network is needed. Run it and trip the breaker by hand:
//
//	go run ./examples/health
//	curl -s 127.0.0.1:8081/readyz
//	for i in 1 2 3; do curl -s '127.0.0.1:8081/chat?fail=1'; done
//	curl -s 127.0.0.1:8081/readyz
//
// or let it play the whole scenario by itself and exit:
//
//	go run ./examples/health -demo
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/statuspage"
)

// demoAPIKey is sent to the fake upstream like a real key would be, to show that it never
// reaches /readyz.
const demoAPIKey = "sk-demo-not-a-real-key"

// failScenario is the fake upstream's builtin scenario that answers 503, selected per call
// with the mocks.ScenarioHeader header.
const failScenario = "unavailable"

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address (loopback only)")
	demo := flag.Bool("demo", false, "run the closed → open → half-open → closed scenario, print it and exit")
	threshold := flag.Int("threshold", 3, "consecutive failed calls that open the circuit")
	brk := flag.Duration("break", 15*time.Second, "how long the circuit stays open (demo: 500ms)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *demo {
		err = runDemo(ctx, os.Stdout, *threshold, 500*time.Millisecond)
	} else {
		err = serve(ctx, *addr, *threshold, *brk)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// app is the example service: one provider ("openai") behind one pipeline, watched by one
// health checker and shown on one status page.
type app struct {
	upstream *mocks.Server
	base     *http.Transport
	client   *http.Client
	pipeline *resilience.Pipeline
	checker  *health.Checker
	page     *statuspage.Page
}

// newApp starts the fake upstream and builds the pipeline and the checker.
func newApp(threshold int, brk time.Duration) (*app, error) {
	opts := resilience.DefaultOptions()
	// No retries, so each failing /chat is one failure of the breaker and the demo needs
	// few calls. Keep the default retries in a real service.
	opts.RetryCount = 0
	opts.TimeoutSeconds = 10
	opts.CircuitBreakerThreshold = threshold
	opts.CircuitBreakerDurationSeconds = math.Max(brk.Seconds(), 0.001)
	p, err := resilience.New(opts, resilience.WithName("openai"))
	if err != nil {
		return nil, err
	}
	checker := health.NewChecker()
	checker.Add("openai", p)
	// A bare pipeline goes on the status page with WithPipeline; a steady client would be
	// statuspage.New(c). The page records the pipeline's events until it is closed.
	page, err := statuspage.New(nil, statuspage.WithPipeline("openai", p))
	if err != nil {
		return nil, err
	}

	base := &http.Transport{}
	return &app{
		upstream: mocks.NewServer(mocks.WithReply("")), // binds 127.0.0.1; echoes the prompt
		base:     base,
		client:   &http.Client{Transport: p.Wrap(base)},
		pipeline: p,
		checker:  checker,
		page:     page,
	}, nil
}

// Close stops the status page and the fake upstream and drops idle connections.
func (a *app) Close() {
	_ = a.page.Close()
	a.base.CloseIdleConnections()
	a.upstream.Close()
}

// routes mounts the checker on readiness only; liveness never looks at providers.
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/chat", a.chat)
	mux.Handle("/readyz", a.checker.Handler())
	mux.Handle("/livez", health.LivenessHandler())
	// The status page, on loopback like everything here; in a real service, behind the same
	// access control as the other debug endpoints.
	mux.Handle("/debug/steady", a.page)
	return mux
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

// chat sends the prompt to the upstream through the pipeline and answers with the reply.
// Errors are reported in general terms: never the upstream URL or its error body.
func (a *app) chat(w http.ResponseWriter, r *http.Request) {
	prompt := r.URL.Query().Get("q")
	if prompt == "" {
		prompt = "Say hello"
	}
	body, _ := json.Marshal(chatRequest{Model: "gpt-4o-mini", Messages: []chatMessage{{Role: "user", Content: prompt}}})
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost,
		a.upstream.OpenAIBaseURL()+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "cannot build request"})
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+demoAPIKey)
	if r.URL.Query().Get("fail") == "1" {
		req.Header.Set(mocks.ScenarioHeader, failScenario)
	}

	resp, err := a.client.Do(req)
	var open *resilience.CircuitOpenError
	switch {
	case errors.As(err, &open):
		if open.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(open.RetryAfter.Seconds()))))
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "provider unavailable: circuit " + open.State.String()})
		return
	case err != nil:
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": "provider call failed"})
		return
	}
	defer resp.Body.Close()
	var out chatResponse
	if resp.StatusCode != http.StatusOK {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": fmt.Sprintf("provider answered %d", resp.StatusCode)})
		return
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": "provider sent an unreadable reply"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"reply": out.Choices[0].Message.Content})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// listenLoopback listens on addr, refusing anything but a loopback address: this example
// has no authentication.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("-addr %q: listen on a loopback IP such as 127.0.0.1", addr)
	}
	return net.Listen("tcp", addr)
}

// newServer returns an http.Server for h with sane timeouts.
func newServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
}

// serve runs the example until ctx ends.
func serve(ctx context.Context, addr string, threshold int, brk time.Duration) error {
	a, err := newApp(threshold, brk)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := listenLoopback(addr)
	if err != nil {
		return err
	}
	srv := newServer(a.routes())
	// An open status page holds a stream that is never idle: close the page as shutdown
	// begins, or Shutdown would wait for it.
	srv.RegisterOnShutdown(func() { _ = a.page.Close() })
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("listening on http://%s: /chat (?fail=1), /readyz, /livez, /debug/steady", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
