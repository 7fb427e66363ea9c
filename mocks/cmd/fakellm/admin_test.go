package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// buildFakellm builds the command into a temporary directory and returns its path.
func buildFakellm(t *testing.T) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build fakellm: %v", err)
		}
	}
	bin := filepath.Join(t.TempDir(), "fakellm")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startFakellm runs the built command with args on a free loopback port and returns the base
// URL and admin URL it printed; the process is stopped (SIGINT) at the end of the test, and
// must exit 0.
func startFakellm(t *testing.T, bin string, args ...string) (base, admin string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "fakellm listening on "); ok {
			base = u
		}
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "Admin API:"); ok {
			admin = strings.Fields(u)[0]
			break
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	if base == "" || admin == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("fakellm printed no URLs (base %q, admin %q); stderr:\n%s (exit: %v)", base, admin, stderr.String(), <-exited)
	}
	t.Cleanup(func() {
		if runtime.GOOS == "windows" {
			_ = cmd.Process.Kill()
		} else {
			_ = cmd.Process.Signal(os.Interrupt)
		}
		select {
		case err := <-exited:
			if err != nil && runtime.GOOS != "windows" {
				t.Errorf("fakellm exit: %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("fakellm did not stop on SIGINT")
		}
	})
	return base, admin
}

// chatStatus sends one OpenAI chat call to base and returns its status.
func chatStatus(t *testing.T, base, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("X-Api-Key", "k")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestFakellm_SteeredFromAnotherProcess builds the command, starts it with the settings
// flags, and steers it through its admin API from this test's process: the way a test in
// another language, or of a program that runs fakellm, uses it.
func TestFakellm_SteeredFromAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	bin := buildFakellm(t)
	base, adminURL := startFakellm(t, bin,
		"-route-script", `/v1/messages=[{"status":529,"repeat":1}]`,
		"-latency", `{"firstTokenMs":1}`,
		"-rpm", "1000", "-limit-minute", "1h",
		"-route-concurrency", "/v1/chat/completions=4")
	if adminURL != base+mocks.AdminPrefix {
		t.Fatalf("admin URL %q, base %q", adminURL, base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := mocks.Admin(adminURL) // the admin URL as printed works as well as the base URL

	// The flags are in force.
	st, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q := st.Scripts.Routes[mocks.RouteMessages]; len(q.Steps) != 1 || q.Steps[0].Status != 529 ||
		st.Latency.All == nil || st.Latency.All.FirstToken != time.Millisecond ||
		st.RateLimits.All == nil || st.RateLimits.All.RequestsPerMinute != 1000 || st.RateLimits.All.MinuteMs != 3_600_000 ||
		st.ConcurrencyLimit.Routes[mocks.RouteChat] != 4 {
		t.Fatalf("start state %+v", st)
	}
	if got := chatStatus(t, base, mocks.RouteMessages); got != 529 {
		t.Fatalf("the -route-script step: %d", got)
	}

	// The primary fails while it runs, then recovers.
	if err := a.RouteScript(ctx, mocks.RouteChat, mocks.Status(503).Always()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := chatStatus(t, base, mocks.RouteChat); got != 503 {
			t.Fatalf("after the change: %d", got)
		}
	}
	if err := a.RouteRateLimits(ctx, mocks.RouteChat, &mocks.RateLimits{RequestsPerMinute: 1, Minute: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := a.RouteScript(ctx, mocks.RouteChat); err != nil { // recovered
		t.Fatal(err)
	}
	if got := chatStatus(t, base, mocks.RouteChat); got != 200 {
		t.Fatalf("recovered: %d", got)
	}
	if got := chatStatus(t, base, mocks.RouteChat); got != 429 {
		t.Fatalf("over the route's new rate limit: %d", got)
	}
	v, err := a.Journal(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if v.Stats.Received != 5 || v.Requests[len(v.Requests)-1].Step != "429 rate limit" {
		t.Fatalf("journal %+v", v)
	}

	// A bad value is refused, naming it; a reset puts the flags' settings back.
	var ae *mocks.AdminError
	if err := a.SetRouteConcurrencyLimit(ctx, mocks.RouteChat, -1); !errors.As(err, &ae) || ae.StatusCode != 400 ||
		!strings.Contains(err.Error(), "max -1 out of range [0, 1000000]") {
		t.Fatalf("a bad limit: %v", err)
	}
	if err := a.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got := chatStatus(t, base, mocks.RouteMessages); got != 529 {
		t.Fatalf("after the reset, the -route-script step again: %d", got)
	}
	if got := chatStatus(t, base, mocks.RouteChat); got != 200 {
		t.Fatalf("after the reset: %d", got)
	}
}

// TestFakellm_AdminOff answers the admin paths 404 with -admin=false.
func TestFakellm_AdminOff(t *testing.T) {
	base := serve(t, "-admin=false")
	_, err := mocks.Admin(base).State(context.Background())
	var ae *mocks.AdminError
	if !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("err = %v", err)
	}
}

func TestRun_RejectsBadSettingsFlagsNamingThem(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-script", `[{"status":700}]`}, "status 700 out of range [100, 599]"},
		{[]string{"-script", `[{"stauts":503}]`}, "stauts"},
		{[]string{"-script", "@testdata/none.json"}, "none.json"},
		{[]string{"-route-script", `/v2/x=[]`}, `"/v2/x" is none of`},
		{[]string{"-route-script", `[]`}, "want route=JSON"},
		{[]string{"-latency", `{"firstTokenMs":-1}`}, "firstTokenMs -1 out of range [0, 86400000]"},
		{[]string{"-route-latency", `/v1/messages={"stragglerRate":2}`}, "stragglerRate 2 out of range [0, 1]"},
		{[]string{"-route-limits", `/v1/messages={"requestsPerMinute":-3}`}, "requestsPerMinute -3 out of range"},
		{[]string{"-rpm", "-5"}, "-rpm -5 out of range [0, 1000000000]"},
		{[]string{"-limit-minute", "48h"}, "-limit-minute 48h0m0s out of range [0s, 24h0m0s]"},
		{[]string{"-concurrency", "-1"}, "-concurrency -1 out of range [0, 1000000]"},
		{[]string{"-overload-status", "500"}, "-overload-status 500 is none of 503, 529 and 429"},
		{[]string{"-route-concurrency", "/v1/messages=x"}, "want route=N"},
		{[]string{"-route-concurrency", "/v9=1"}, `"/v9" is none of`},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"-addr", "127.0.0.1:0"}, tc.args...), io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, stderr.String(), tc.want)
		}
	}
}
