package interop

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
	steadyanthropic "github.com/steadyllm/steady/providers/anthropic"
	steadyopenai "github.com/steadyllm/steady/providers/openai"
)

// The harness of aimock_test.go: it starts @copilotkit/aimock, at the version pinned in
// aimock/package.json, as a child process listening on 127.0.0.1, one server per test.

const (
	// aimockPackage is the npm project that pins aimock; `npm ci --prefix interop/aimock`
	// installs it into its node_modules.
	aimockPackage = "aimock"
	// aimockKey is the only API key the server accepts (AIMOCK_API_KEYS): every call of
	// the tests proves that the provider sent its key where the API expects one.
	aimockKey = "sk-steady-interop-0123"
	// aimockStartTimeout bounds the wait for the server to listen: a cold node start on a
	// loaded CI machine takes a second or two, not thirty.
	aimockStartTimeout = 30 * time.Second

	aimockOpenAIModel    = "gpt-4o-mini"
	aimockAnthropicModel = "claude-sonnet-4-5"
	// aimockResponsesModel is the model of the Responses wire, so that fixtures matched by
	// model tell it from chat completions.
	aimockResponsesModel = "gpt-4.1-mini"
)

// obj is a JSON object of a fixture or of a journal entry.
type obj = map[string]any

// fixture is one entry of an aimock fixture file: the request it matches and the answer it
// gives, as aimock's fixture format defines them (see its README and dist/types.d.ts).
type fixture struct {
	Match    obj `json:"match"`
	Response obj `json:"response"`
	// ChunkSize is the number of characters per streamed text or argument delta.
	ChunkSize int `json:"chunkSize,omitempty"`
	// Latency is the pause before each streamed chunk, in milliseconds.
	Latency int `json:"latency,omitempty"`
	// TruncateAfterChunks breaks the connection after that many chunks.
	TruncateAfterChunks int `json:"truncateAfterChunks,omitempty"`
	// Chaos injects faults: {"malformedRate": 1} or {"disconnectRate": 1}.
	Chaos obj `json:"chaos,omitempty"`
}

// aimock is one running server. Its transport is the tests' own, so that its idle
// connections can be closed before the server stops and goleak sees no stray goroutine.
type aimock struct {
	url       string
	transport *http.Transport
}

// wireFormat builds one of steady's providers against an aimock server.
type wireFormat struct {
	name  string // also the provider's name
	model string
	build func(t *testing.T, a *aimock, key string, hc *http.Client) providers.Provider
}

// wireFormats are the wire formats under test: OpenAI's chat completions, Anthropic's
// Messages, OpenAI's Responses. One fixture answers all, so every case also proves that the
// providers turn the same answer into the same neutral response.
var wireFormats = []wireFormat{
	{"openai", aimockOpenAIModel, func(t *testing.T, a *aimock, key string, hc *http.Client) providers.Provider {
		p, err := steadyopenai.New(steadyopenai.Config{Name: "openai", BaseURL: a.url + "/v1", APIKey: key,
			HTTPClient: hc, Model: aimockOpenAIModel})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"anthropic", aimockAnthropicModel, func(t *testing.T, a *aimock, key string, hc *http.Client) providers.Provider {
		p, err := steadyanthropic.New(steadyanthropic.Config{Name: "anthropic", BaseURL: a.url, APIKey: key,
			HTTPClient: hc, Model: aimockAnthropicModel})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
	// OpenAI's Responses API, steady's own wire for it.
	{"responses", aimockResponsesModel, func(t *testing.T, a *aimock, key string, hc *http.Client) providers.Provider {
		p, err := steadyopenai.New(steadyopenai.Config{Name: "responses", API: steadyopenai.Responses, BaseURL: a.url + "/v1",
			APIKey: key, HTTPClient: hc, Model: aimockResponsesModel})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
}

// provider returns the provider of wire format wf talking straight to a, with the right key.
func (a *aimock) provider(t *testing.T, wf wireFormat) providers.Provider {
	return wf.build(t, a, aimockKey, &http.Client{Transport: a.transport})
}

// startAimock writes fixtures to a file in t's temporary directory and serves them from a new
// aimock process, stopped when t ends. It skips t when node is not installed, and fails it
// when node is but the pinned aimock is not: CI installs it, so a missing package is a broken
// setup, not a reason to test less.
func startAimock(t *testing.T, fixtures ...fixture) *aimock {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: skipping the aimock second-opinion tests")
	}
	cli := installedAimock(t)
	file := filepath.Join(t.TempDir(), "fixtures.json")
	data, err := json.Marshal(obj{"fixtures": fixtures})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(node, cli, "--host", "127.0.0.1", "--port", "0", "--fixtures", file, "--log-level", "info")
	cmd.Env = append(withoutAimockSettings(os.Environ()), "AIMOCK_API_KEYS="+aimockKey)
	out := &aimockOutput{listening: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec calls it from one goroutine at a time
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting aimock: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }() // reaps the process: no zombie
	a := &aimock{transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("aimock output:\n%s", out)
		}
	})
	t.Cleanup(a.transport.CloseIdleConnections) // runs first: no connection outlives the server

	deadline := time.NewTimer(aimockStartTimeout)
	defer deadline.Stop()
	select {
	case a.url = <-out.listening:
	case <-exited:
		t.Fatalf("aimock exited before listening (%v):\n%s", waitErr, out)
	case <-deadline.C:
		t.Fatalf("aimock did not listen within %v:\n%s", aimockStartTimeout, out)
	}
	a.awaitReady(t, exited, deadline.C)
	return a
}

// awaitReady polls GET /ready until it answers 200, the process exits or the deadline passes.
func (a *aimock) awaitReady(t *testing.T, exited <-chan struct{}, deadline <-chan time.Time) {
	t.Helper()
	hc := &http.Client{Transport: a.transport, Timeout: time.Second}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		resp, err := hc.Get(a.url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-poll.C:
		case <-exited:
			t.Fatal("aimock exited before it was ready")
		case <-deadline:
			t.Fatalf("aimock was not ready within %v (last: %v)", aimockStartTimeout, err)
		}
	}
}

// installedAimock returns the path of aimock's CLI, after checking that node_modules holds
// exactly the version aimock/package.json pins.
func installedAimock(t *testing.T) string {
	t.Helper()
	var pin struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile(filepath.Join(aimockPackage, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &pin)
	}
	want := pin.Dependencies["@copilotkit/aimock"]
	if err != nil || want == "" {
		t.Fatalf("reading the aimock pin in interop/aimock/package.json: %v", err)
	}
	dir := filepath.Join(aimockPackage, "node_modules", "@copilotkit", "aimock")
	var got struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		_ = json.Unmarshal(data, &got)
	}
	if got.Version != want || got.Bin["llmock"] == "" {
		t.Fatalf("node is installed but @copilotkit/aimock %s is not (found %q in interop/%s): "+
			"run `npm ci --prefix interop/aimock` from the repository root, as .ci/run does", want, got.Version, dir)
	}
	// The llmock bin serves fixture files (-f); the aimock bin wants a whole-suite config.
	return filepath.Join(dir, filepath.FromSlash(got.Bin["llmock"]))
}

// withoutAimockSettings drops the AIMOCK_* variables of the caller's environment, which could
// change how the server matches, records or authenticates.
func withoutAimockSettings(env []string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AIMOCK_") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// listeningLine is what the server prints once it accepts connections.
var listeningLine = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// aimockOutput keeps the server's output, for failure messages, and sends the URL it prints
// on listening once.
type aimockOutput struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	listening chan string // buffered: Write never blocks on it
	seen      bool
}

func (o *aimockOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if !o.seen {
		if m := listeningLine.FindSubmatch(o.buf.Bytes()); m != nil {
			o.seen = true
			o.listening <- string(m[1])
		}
	}
	return len(p), nil
}

func (o *aimockOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// journalEntry is one request as aimock recorded it. For /v1/messages, Body is aimock's own
// reading of the Anthropic request, translated to chat-completions form.
type journalEntry struct {
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Headers  map[string]string `json:"headers"`
	Body     json.RawMessage   `json:"body"`
	Response struct {
		Status int `json:"status"`
	} `json:"response"`
}

// journal returns the requests aimock received on path, oldest first.
func (a *aimock) journal(t *testing.T, path string) []journalEntry {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, a.url+"/__aimock/journal?path="+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+aimockKey)
	resp, err := (&http.Client{Transport: a.transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries []journalEntry
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("journal: HTTP %d, %v", resp.StatusCode, err)
	}
	return entries
}
