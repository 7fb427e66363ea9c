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
