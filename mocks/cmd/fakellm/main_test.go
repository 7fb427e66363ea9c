package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun_RefusesNonLoopbackAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "[::]:0"} {
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"-addr", addr}, io.Discard, &stderr); code != 2 {
			t.Errorf("%s: exit %d", addr, code)
		}
		if !strings.Contains(stderr.String(), "-allow-remote") {
			t.Errorf("%s: stderr %q", addr, stderr.String())
		}
	}
}

func TestRun_RejectsBadFlagsAndFiles(t *testing.T) {
	for _, args := range [][]string{{"-chaos", "2"}, {"-scenario", "testdata/missing.json"}, {"extra"}, {"-nope"}} {
		if code := run(context.Background(), args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

func TestRun_ServesTheScenarioFileUntilStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-scenario", "../../testdata/scenario-example.json", "-seed", "3"}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatal("no output")
	}
	url := strings.TrimPrefix(sc.Text(), "fakellm listening on ")
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 503 { // the file's script starts with a 503
		t.Errorf("status %d", res.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:1": true, "127.1.2.3:1": true,
		"0.0.0.0:1": false, ":1": false, "example.com:1": false, "nonsense": false} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("%s: err = %v", addr, err)
		}
	}
}

func TestRun_HelpDocumentsTheBodyAndJournalLimits(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, io.Discard, &stderr); code != 2 {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"-max-body", "(default 4194304)", "413", "nested deeper than 64",
		"-journal-entries", "(default 10000)", "-journal-body", "(default 1048576)", "-journal-bytes", "(default 67108864)", "oldest"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRun_RejectsANonPositiveMaxBody(t *testing.T) {
	for _, v := range []string{"0", "-1"} {
		if code := run(context.Background(), []string{"-max-body", v}, io.Discard, io.Discard); code != 2 {
			t.Errorf("-max-body %s: exit %d", v, code)
		}
	}
}

func TestRun_AnswersBodiesOverMaxBody413(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-max-body", "100", "-journal-entries", "1", "-journal-body", "10", "-journal-bytes", "4096"}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatal("no output")
	}
	url := strings.TrimPrefix(sc.Text(), "fakellm listening on ")
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		pad  int
		want int
	}{{0, 200}, {100, 413}} {
		body := `{"model":"m","messages":[{"role":"user","content":"x"}]}` + strings.Repeat(" ", tc.pad)
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("a %d-byte body: status %d, want %d", len(body), res.StatusCode, tc.want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}
