package statuspage_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The browser tests drive a real headless Chromium through the DevTools protocol over a pipe
// (--remote-debugging-pipe: messages on file descriptors 3 and 4, each ended by a NUL byte),
// with the standard library alone: no WebSocket, no browser-driving module, nothing for the
// SDK's module to depend on, and only the three commands the tests need (open a tab, load a
// page, evaluate an expression).

// chromiumFlags keep Chromium off the network and quick to start where the network is closed:
// without them it hangs on lookups for its own services.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--mute-audio", "--remote-debugging-pipe",
}

// findChromium returns the path of Chromium. When it is missing the test cannot run: under CI
// (CI=true) that is a failure, elsewhere a skip.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	const install = "apt-get install -y chromium"
	if os.Getenv("CI") == "true" {
		t.Fatalf("chromium is not installed, and CI=true: the browser test must run (%s)", install)
	}
	t.Skipf("chromium is not installed (%s)", install)
	return ""
}

// browser is a headless Chromium of the test's own, with one tab.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser // the browser reads its commands here (its fd 3)
	stderr  *limitedBuffer
	session string

	mu      sync.Mutex
	next    int
	pending map[int]chan reply
	readErr error
	done    chan struct{} // the reader has stopped
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// launch starts Chromium with a fresh profile and opens one tab; the test's cleanup closes it
// and ends its processes.
func launch(t *testing.T, path string) *browser {
	t.Helper()
	toBrowser, in, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), chromiumFlags...), "--user-data-dir="+t.TempDir(), "about:blank")
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser}   // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers end with it
	b := &browser{t: t, cmd: cmd, in: in, stderr: &limitedBuffer{max: 64 << 10}, pending: map[int]chan reply{},
		done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.stderr, b.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = toBrowser.Close()
	_ = fromBrowser.Close()
	go b.read(out)
	t.Cleanup(b.close)

	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call(b.session, "Page.enable", nil, nil)
	return b
}

// read delivers the browser's replies to their callers until the pipe closes; events are
// not needed.
func (b *browser) read(out *os.File) {
	defer close(b.done)
	defer out.Close()
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID int `json:"id"`
			reply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.reply
		}
	}
}

// call sends a command (to the tab's session, or to the browser with "") and decodes its
// result into out; it fails the test on an error or after a generous limit.
func (b *browser) call(session, method string, params any, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatalf("%s: %v\nchromium said:\n%s", method, err, b.stderr)
	}
}

func (b *browser) try(session, method string, params any, out any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("the browser is gone: %w", b.readErr)
	}
	b.next++
	id := b.next
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return errors.New("the browser closed the pipe")
		case r.Error != nil:
			return errors.New(r.Error.Message)
		case out != nil:
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(60 * time.Second):
		return errors.New("no answer in 60 s")
	}
}

// navigate loads url in the tab.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
}

// eval evaluates a JavaScript expression in the tab and returns its value as JSON text.
func (b *browser) eval(expr string) (string, error) {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := b.try(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		return "", err
	}
	if res.Exception != nil {
		return "", errors.New(res.Exception.Text)
	}
	return string(res.Result.Value), nil
}

// until polls expr until it is true, and returns when it first saw it so; it fails the test
// after limit.
func (b *browser) until(what, expr string, limit time.Duration) time.Time {
	b.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v, err := b.eval(expr)
		now := time.Now()
		if err == nil && v == "true" {
			return now
		}
		if now.After(deadline) {
			dom, _ := b.eval(`document.documentElement.outerHTML`)
			b.t.Fatalf("the page did not show %s within %s (last: %s %v)\n%s", what, limit, v, err, dom)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// close asks Chromium to quit, then ends its process group if it lingers.
func (b *browser) close() {
	_ = b.try("", "Browser.close", nil, nil)
	_ = b.in.Close()
	exited := make(chan struct{})
	go func() {
		_ = b.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // any helper left in its group
	<-b.done
}

// limitedBuffer keeps the first max bytes written to it, for a failure's message.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string { return strconv.Quote(s) }

// rowIs is an expression that is true when the page's row key has attr set to value.
func rowIs(key, attr, value string) string {
	return `(function(){var r=document.querySelector('tr[data-name=` + jsString(key) + `]');` +
		`return !!r && r.getAttribute(` + jsString("data-"+attr) + `)===` + jsString(value) + `;})()`
}

// countdownOf is an expression for the text of the first countdown in the page's row key (the
// next probe, or the pause), "" when it has none.
func countdownOf(key string) string {
	return `(function(){var r=document.querySelector('tr[data-name=` + jsString(key) + `]');` +
		`var u=r&&r.querySelector("[data-until]");return u?u.textContent:"";})()`
}

// budgetRowIs is an expression that is true when the row of key in the page's budget has attr
// set to value.
func budgetRowIs(budget, key, attr, value string) string {
	return `(function(){var r=document.querySelector('table[data-budget=` + jsString(budget) + `] tr[data-key=` +
		jsString(key) + `]');return !!r && r.getAttribute(` + jsString("data-"+attr) + `)===` + jsString(value) + `;})()`
}

// budgetText is an expression for the text of the page's budget: its heading and what follows
// it up to the next heading.
func budgetText(budget string) string {
	return `(function(){var h=document.querySelector('h3[data-budget=` + jsString(budget) + `]');if(!h)return "";` +
		`var s=h.textContent;for(var e=h.nextElementSibling;e&&!/^H[23]$/.test(e.tagName);e=e.nextElementSibling)s+=" "+e.textContent;` +
		`return s;})()`
}

// budgetEnds is an expression for the countdown of the page's budget to its window's end.
func budgetEnds(budget string) string {
	return `(function(){var u=document.querySelector('h3[data-budget=` + jsString(budget) + `] [data-until]');` +
		`return u?u.textContent:"";})()`
}
