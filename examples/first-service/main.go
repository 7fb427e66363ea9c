// Command first-service is the service docs/first-service.md builds: an HTTP endpoint that
// answers questions through steady's client, configured from appsettings.json, with a fallback
// from OpenAI to Anthropic, a per-call policy, readiness and liveness probes, and log/slog
// records of what the pipeline does.
//
// Against the fake LLM server, with no API key (see docs/first-service.md):
//
//	go run ./mocks/cmd/fakellm &
//	export OPENAI_API_KEY=sk-fake ANTHROPIC_API_KEY=sk-ant-fake
//	go run ./examples/first-service -config examples/first-service/appsettings.json \
//	    -config examples/first-service/appsettings.Development.json
//	curl -s '127.0.0.1:8081/chat?q=hello'
//
// With -ask it asks one question and exits instead of serving.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/statuspage"
)

// files is the repeatable -config flag: JSON files loaded in order, a later one overriding
// an earlier one key by key.
type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(s string) error { *f = append(*f, s); return nil }

func main() {
	var configs files
	flag.Var(&configs, "config", "a JSON configuration file; repeat to layer files (default examples/first-service/appsettings.json)")
	addr := flag.String("addr", "127.0.0.1:8081", "address to serve on")
	ask := flag.String("ask", "", "ask this one question, print the answer and exit")
	flag.Parse()
	if len(configs) == 0 {
		configs = files{"examples/first-service/appsettings.json"}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *ask != "" {
		err = askOnce(ctx, os.Stdout, configs, *ask)
	} else {
		err = serve(ctx, logger, *addr, configs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "first-service:", err)
		os.Exit(1)
	}
}

// askOnce is the README's first call: load the configuration, build the client, ask.
func askOnce(ctx context.Context, out io.Writer, configs []string, question string) error {
	// docs:begin first-call
	cfg, err := config.Load(configs...) // the files in order, then the environment (LLM__…)
	if err != nil {
		return err // every mistake at once, each with its JSON path and what is allowed
	}
	c, err := steady.FromConfig(cfg) // a pipeline per provider, LLM.Fallback as the chain
	if err != nil {
		return err
	}
	defer c.Close()

	resp, err := c.Chat(ctx, &providers.ChatRequest{
		Messages:  []providers.Message{{Role: providers.RoleUser, Content: question}},
		MaxTokens: 200,
	})
	if err != nil {
		return err // a *providers.Error: Kind, StatusCode, RetryAfter, Attempts; never the key
	}
	fmt.Fprintf(out, "%s (served by %s, model %s, %d+%d tokens)\n", resp.Message.Content,
		resp.Deployment, resp.Model, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// docs:end first-call
	return nil
}

// serve runs the service on addr until ctx ends.
func serve(ctx context.Context, logger *slog.Logger, addr string, configs []string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return run(ctx, logger, ln, configs)
}

// run builds the service and serves it on ln until ctx ends, then shuts down gracefully.
func run(ctx context.Context, logger *slog.Logger, ln net.Listener, configs []string) error {
	// docs:begin build
	cfg, err := config.Load(configs...)
	if err != nil {
		return err
	}
	// Every retry, give-up, circuit change and fallback as a log record (and, once the
	// application installs an OpenTelemetry SDK, as metrics and spans).
	tel, err := observe.New(observe.WithLogger(logger))
	if err != nil {
		return err
	}
	c, err := steady.FromConfig(cfg, client.WithTelemetry(tel))
	if err != nil {
		return err
	}
	defer c.Close()
	// docs:end build

	// docs:begin mux
	// Readiness follows the providers' circuits; liveness never does. With WithFallback, one
	// provider down while the other serves is a warning, not a failure.
	checker := health.NewChecker(health.WithFallback())
	checker.AddSet(c)
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", checker.Handler())
	mux.Handle("GET /livez", health.LivenessHandler())
	mux.Handle("GET /chat", chat(c))
	// docs:end mux

	// docs:begin status
	// The live status page, for people on call: every provider's circuit, pause, headroom,
	// latency and the latest failures, redacted. Mount it where your debug endpoints are,
	// behind the same access control.
	page, err := statuspage.New(c)
	if err != nil {
		return err
	}
	defer page.Close()
	mux.Handle("GET /debug/steady", page)
	// docs:end status

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(func() { _ = page.Close() }) // an open page must not hold Shutdown up
	logger.Info("serving", "addr", ln.Addr().String(), "fallback", cfg.Fallback)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// answer is what /chat returns.
type answer struct {
	Answer   string `json:"answer"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// docs:begin chat
// chat answers GET /chat?q=… with the interactive policy: a person is waiting, so fewer
// retries and shorter time limits than the batch jobs of the same service get.
func chat(c *client.Client) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		opts := []client.CallOption{
			client.WithPolicy("interactive"),
			client.WithTenant(r.Header.Get("X-Tenant")), // for the telemetry; no header, no tenant
		}
		if id := r.Header.Get("X-Request-Id"); id != "" {
			opts = append(opts, client.WithRequestID(id)) // sent on every attempt and fallback
		}
		resp, err := c.Chat(r.Context(), &providers.ChatRequest{
			Messages:  []providers.Message{{Role: providers.RoleUser, Content: r.URL.Query().Get("q")}},
			MaxTokens: 200,
		}, opts...)
		if err != nil {
			// The status for the error's kind, Retry-After when waiting helps, and a small
			// JSON body that repeats nothing of the provider's message.
			client.WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, answer{Answer: resp.Message.Content, Provider: resp.Provider, Model: resp.Model})
	}
}

// docs:end chat

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
