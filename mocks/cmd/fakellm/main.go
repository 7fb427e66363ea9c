// Command fakellm runs the steady fake LLM server standalone, for tests written in other
// languages or driven by tools such as curl:
//
//	go run ./mocks/cmd/fakellm -addr 127.0.0.1:8080 [-scenario file.json] [-seed N] [-chaos 0.2]
//
// It speaks the OpenAI (/v1/chat/completions, /v1/embeddings, /v1/models), Azure OpenAI
// (/openai/deployments/{name}/…) and Anthropic (/v1/messages) wire formats. Faults come from the
// scenario file (format: mocks.Config), from the X-Fake-Scenario request header (a scenario of
// the file, or a builtin such as rate-limited, overloaded, stall, reset, cut-stream), or from
// chaos mode. It listens on loopback addresses only unless -allow-remote is given, and stops on
// SIGINT or SIGTERM.
//
// The faults of a failover test work here as from Go: streams whose first token is late, that
// stall after some content, carry a malformed event mid-stream, end without their terminal
// event or are cut after N words (scenario file steps, or builtins such as slow-first-token and
// no-terminal); refusals and content filters; per-model scripts ("models"), outages on a
// schedule from the server's start ("outages"); context windows (-context-window model=tokens,
// "contextWindows") and models that refuse an assistant prefill (-reject-prefill,
// "rejectPrefill"); latency profiles, a time to first token with stragglers for every request,
// a model or an API key ("latency", "modelLatency", "keyLatency").
//
// Scripts, latency profiles and limits can be set at the start by flags (-script,
// -route-script, -latency, -route-latency, -rpm, -tpm, -limit-minute, -route-limits,
// -concurrency, -route-concurrency, -overload-status; each replaces only what it names of the
// file's settings) and
// changed while it runs through the admin API under /_fake/ (loopback peers only; -admin=false
// turns it off), whose URL it prints: PUT /_fake/script, /_fake/latency, /_fake/limits/rate,
// /_fake/limits/concurrency; GET /_fake/state, /_fake/journal; POST /_fake/reset. Go code
// steers it with mocks.Admin(url).
//
// Left running, it stays bounded: it reads at most -max-body bytes of a request (default
// 4 MiB; a longer body is answered 413 in the API's own error shape), refuses JSON nested
// deeper than 64 levels, and its journal keeps the latest -journal-entries requests (default
// 10 000), the first -journal-body bytes of each body (default 1 MiB) and -journal-bytes in
// all (default 64 MiB), dropping the oldest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/steadyllm/steady/mocks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run starts the server as args say, prints its URL on stdout and serves until ctx ends. It
// returns the exit code: 0 after a clean stop, 2 for bad flags or files, 1 when it cannot listen.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usage, mocks.MaxJSONDepth, wrap(mocks.BuiltinScenarios(), 88))
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:8080", "`host:port` to listen on (loopback only unless -allow-remote)")
	file := fs.String("scenario", "", "scenario `file` (JSON, see mocks.Config)")
	seed := fs.Int64("seed", 0, "chaos seed (overrides the file's)")
	rate := fs.Float64("chaos", 0, "fraction `0..1` of calls given a random fault (overrides the file's)")
	reply := fs.String("reply", "", "text of every reply (default: echo the last user message)")
	key := fs.String("api-key", "", "accept only this API key (default: any non-empty key)")
	remote := fs.Bool("allow-remote", false, "allow listening on a non-loopback address")
	maxBody := fs.Int64("max-body", mocks.DefaultMaxBodyBytes,
		"largest request body read, in `bytes`; a longer one is answered 413 (overrides the file's maxBodyBytes)")
	entries := fs.Int("journal-entries", mocks.DefaultJournalEntries,
		"requests the journal keeps, the oldest dropped beyond; 0 the default, negative none (overrides the file's journal.maxEntries)")
	bodyBytes := fs.Int("journal-body", mocks.DefaultJournalBodyBytes,
		"`bytes` of each request body the journal keeps, the rest cut; 0 the default, negative none (overrides the file's journal.maxBodyBytes)")
	totalBytes := fs.Int64("journal-bytes", mocks.DefaultJournalTotalBytes,
		"`bytes` the kept requests may hold in all (bodies, headers), the oldest dropped beyond; 0 the default, negative none (overrides the file's journal.maxTotalBytes)")
	windows := map[string]int{}
	fs.Func("context-window", "give a model a context window, as `model=tokens` (repeatable; adds to the file's contextWindows): a longer prompt plus max_tokens is answered 400 context_length_exceeded (OpenAI) or prompt is too long (Anthropic)",
		func(v string) error {
			model, n, ok := strings.Cut(v, "=")
			tokens, err := strconv.Atoi(n)
			if !ok || model == "" || err != nil || tokens <= 0 {
				return fmt.Errorf("want model=tokens with a positive number of tokens, got %q", v)
			}
			if _, known := windows[model]; !known && len(windows) >= mocks.MaxModels {
				return fmt.Errorf("more than %d models", mocks.MaxModels)
			}
			windows[model] = tokens
			return nil
		})
	prefill := fs.Bool("reject-prefill", false, "every model refuses a conversation ending with an assistant message (400 \"does not support assistant message prefill\"); the file's rejectPrefill can name some models only")
	admin := fs.Bool("admin", true, "serve the admin API under "+mocks.AdminPrefix+" (loopback peers only): change scripts, latency and limits while running, read the state, reset")
	var steer settings
	steer.flags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakellm: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	if *rate < 0 || *rate > 1 {
		fmt.Fprintf(stderr, "fakellm: -chaos %v out of range [0, 1]\n", *rate)
		return 2
	}
	if *maxBody <= 0 {
		fmt.Fprintf(stderr, "fakellm: -max-body %d must be positive\n", *maxBody)
		return 2
	}
	if err := checkLoopback(*addr); err != nil && !*remote {
		fmt.Fprintf(stderr, "fakellm: %v (pass -allow-remote to listen there anyway)\n", err)
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var opts []mocks.Option
	var journal mocks.JournalLimits
	var scenario *mocks.Config
	if *file != "" {
		cfg, err := mocks.LoadConfig(*file)
		if err != nil {
			fmt.Fprintf(stderr, "fakellm: %v\n", err)
			return 2
		}
		scenario = cfg
		opts = append(opts, mocks.WithConfig(cfg))
		if !set["seed"] {
			*seed = cfg.Seed
		}
		if !set["chaos"] {
			*rate = cfg.Chaos
		}
		if cfg.Journal != nil {
			journal = *cfg.Journal
		}
		if !set["max-body"] && cfg.MaxBodyBytes > 0 {
			*maxBody = cfg.MaxBodyBytes
		}
	}
	if set["journal-entries"] {
		journal.MaxEntries = *entries
	}
	if set["journal-body"] {
		journal.MaxBodyBytes = *bodyBytes
	}
	if set["journal-bytes"] {
		journal.MaxTotalBytes = *totalBytes
	}
	opts = append(opts, mocks.WithMaxBodyBytes(*maxBody), mocks.WithJournalLimits(journal))
	if *reply != "" {
		opts = append(opts, mocks.WithReply(*reply))
	}
	if *key != "" {
		opts = append(opts, mocks.WithAPIKey(*key))
	}
	if len(windows) > 0 {
		opts = append(opts, mocks.WithContextWindows(windows))
	}
	if *prefill {
		opts = append(opts, mocks.WithRejectPrefill())
	}
	if set["seed"] || set["chaos"] {
		opts = append(opts, mocks.WithChaos(*seed, *rate))
	}
	steerOpts, err := steer.options(set, scenario)
	if err != nil {
		fmt.Fprintf(stderr, "fakellm: %v\n", err)
		return 2
	}
	opts = append(opts, steerOpts...)
	if !*admin {
		opts = append(opts, mocks.WithoutAdmin())
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "fakellm: %v\n", err)
		return 1
	}
	s := mocks.NewServer(append(opts, mocks.WithListener(l))...)
	defer s.Close()
	fmt.Fprintf(stdout, "fakellm listening on %s\n", s.URL())
	fmt.Fprintf(stdout, "  OpenAI base URL:    %s\n  Anthropic base URL: %s\n", s.OpenAIBaseURL(), s.AnthropicBaseURL())
	if *admin {
		fmt.Fprintf(stdout, "  Admin API:          %s (loopback peers only)\n", s.AdminURL())
	} else {
		fmt.Fprintf(stdout, "  Admin API:          off (-admin=false)\n")
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "fakellm stopping")
	return 0
}

// usage heads the -h output (a format taking mocks.MaxJSONDepth and the builtin scenarios):
// what the command does, the faults it knows and the bounds it keeps when left running.
const usage = `Usage: fakellm [flags]

Runs the steady fake LLM server (OpenAI, Azure OpenAI and Anthropic wire formats) until
SIGINT or SIGTERM. Faults come from -scenario, the X-Fake-Scenario header or -chaos.

A scenario file (JSON, see mocks.Config; unknown keys are refused) gives a default "script",
named "scenarios", per-route ("routes") and per-model ("models") scripts, "outages" (windows
from the server's start in which matching requests all fail), "contextWindows" and
"rejectPrefill". Its steps fail a call (status, stall, delay_ms, reset, …) or its stream
after it opened: first_token_delay_ms, stall_after with stall_for_ms, malformed_at,
omit_terminal, cut/cut_after with count_content, refuse/refuse_after/refuse_category,
content_filter. A call picks a scenario with the X-Fake-Scenario header, the file's or one
of the builtins:
%[2]s

Scripts, latency profiles and limits are also set by flags (below), which replace the
file's, and can be changed while it runs through the admin API, whose URL it prints
(loopback peers only; -admin=false turns it off):
  GET  /_fake/state               the settings in force and the counters
  GET  /_fake/journal?last=N      the last requests (no headers, no bodies)
  PUT  /_fake/script              {"route"|"model": name, "steps": [step, ...]}
  PUT  /_fake/latency             {"route"|"model"|"key": name, "profile": {...}}
  PUT  /_fake/limits/rate         {"route"|"key": name, "limits": {"requestsPerMinute": n, ...}}
  PUT  /_fake/limits/concurrency  {"route": name, "max": n}
  POST /_fake/reset               {} or {"route": name}: back to the start settings
For example:
  curl -X PUT -H 'Content-Type: application/json' \
    -d '{"route":"/v1/chat/completions","steps":[{"status":503,"forever":true}]}' \
    http://127.0.0.1:8080/_fake/script

Left running, it stays bounded: it reads at most -max-body bytes of a request (a longer
body is answered 413 in the API's own error shape, unread when Content-Length says so) and
refuses JSON nested deeper than %[1]d levels (400). Its in-memory journal keeps the latest
-journal-entries requests, the first -journal-body bytes of each body, and -journal-bytes
in all, dropping the oldest; its counters count every request.

Flags:
`

// wrap lists names, comma-separated and indented, in lines of at most width bytes.
func wrap(names []string, width int) string {
	var b strings.Builder
	line := 0
	for i, name := range names {
		item := name
		if i < len(names)-1 {
			item += ","
		}
		if line > 0 && line+1+len(item) > width {
			b.WriteByte('\n')
			line = 0
		}
		if line == 0 {
			b.WriteString("  ")
			line = 2
		} else {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(item)
		line += len(item)
	}
	return b.String()
}

// checkLoopback returns an error unless addr's host is a loopback IP or "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if host == "" {
		return errors.New("address " + addr + " listens on every interface")
	}
	return errors.New("address " + addr + " is not a loopback address")
}
