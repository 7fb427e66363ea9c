package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// serve runs fakellm with args on a free loopback port until the test ends, and returns its
// base URL.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		cancel()
		t.Fatalf("fakellm %v printed nothing (exit %d)", args, <-done)
	}
	url := strings.TrimPrefix(sc.Text(), "fakellm listening on ")
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d", code)
		}
	})
	return url
}

// post sends body to url+p with the dialect's headers (and scenario, when set), and returns
// the status and the whole body.
func post(t *testing.T, url, p, scenario, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+p, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if scenario != "" {
		req.Header.Set("X-Fake-Scenario", scenario)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return res.StatusCode, string(b)
}

func TestRun_ServesTheFailoverFaultsFromFileAndFlags(t *testing.T) {
	url := serve(t, "-scenario", "../../testdata/scenario-failover.json", "-context-window", "gpt-4.1=3", "-reject-prefill")
	chat := func(model, extra string) string {
		return `{"model":"` + model + `",` + extra + `"messages":[{"role":"user","content":"one two three four"}]}`
	}
	// The file's model script, the flag's context window and prefill rejection.
	if code, _ := post(t, url, "/v1/chat/completions", "", chat("gpt-4o", "")); code != 503 {
		t.Errorf("gpt-4o: %d, want the file's 503", code)
	}
	if code, b := post(t, url, "/v1/chat/completions", "", chat("gpt-4.1", "")); code != 400 || !strings.Contains(b, "context_length_exceeded") {
		t.Errorf("gpt-4.1: %d %s", code, b)
	}
	prefill := `{"model":"claude-x","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{"}]}`
	if code, b := post(t, url, "/v1/messages", "", prefill); code != 400 || !strings.Contains(b, "assistant message prefill") {
		t.Errorf("prefill: %d %s", code, b)
	}
	// The file's outage of one model, in force from the start for a minute.
	opus := `{"model":"claude-opus-4-1","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`
	if code, _ := post(t, url, "/v1/messages", "", opus); code != 529 {
		t.Errorf("claude-opus-4-1 during its outage: %d", code)
	}
	// A stream fault named by the header: complete, finish reason, no [DONE].
	_, b := post(t, url, "/v1/chat/completions", "no-done", chat("gpt-4o-mini", `"stream":true,`))
	if !strings.Contains(b, `"finish_reason":"stop"`) || strings.Contains(b, "[DONE]") {
		t.Errorf("no-done stream:\n%s", b)
	}
	_, b = post(t, url, "/v1/chat/completions", "refused", chat("gpt-4o-mini", ""))
	var v struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal string  `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal([]byte(b), &v) != nil || len(v.Choices) != 1 || v.Choices[0].Message.Content != nil ||
		v.Choices[0].Message.Refusal != "I can't help with that." {
		t.Errorf("refused: %s", b)
	}
}

func TestRun_RejectsBadContextWindows(t *testing.T) {
	for _, v := range []string{"m", "m=0", "m=-3", "=5", "m=x"} {
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"-context-window", v}, io.Discard, &stderr); code != 2 {
			t.Errorf("-context-window %s: exit %d", v, code)
		}
	}
}

func TestRun_HelpDocumentsTheFailoverFaults(t *testing.T) {
	var stderr bytes.Buffer
	run(context.Background(), []string{"-h"}, io.Discard, &stderr)
	for _, want := range []string{"-context-window model=tokens", "-reject-prefill", "first_token_delay_ms", "stall_after",
		"malformed_at", "omit_terminal", "count_content", "refuse_after", "content_filter", "outages", "models",
		"slow-first-token", "no-terminal", "refusal-mid-stream"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-h lacks %q", want)
		}
	}
}
