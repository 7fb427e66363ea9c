package resilience

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// quotaPeekLimit is how much of a 429 body is read to tell an exhausted quota (permanent)
// from a rate limit (transient). Provider error envelopes are a few hundred bytes.
const quotaPeekLimit = 8 << 10

// quotaMarkers are the error codes and phrases with which providers say a 429 will not pass
// by waiting: the account is out of credit or over its spend limit.
var quotaMarkers = [][]byte{
	[]byte("insufficient_quota"),
	[]byte("billing_hard_limit_reached"),
	[]byte("billing_not_active"),
	[]byte("spend_limit"),
	[]byte("exceeded your current quota"),
}

// classifyResponse decides whether a response is worth another attempt, and why.
// x-should-retry, when the server sends it, overrides the status. A 429 whose body says the
// quota is exhausted is permanent. Peeking at that body leaves it intact for the caller.
func (p *Pipeline) classifyResponse(resp *http.Response) (bool, string) {
	if v := resp.Header["X-Should-Retry"]; len(v) > 0 { // canonical key: no Header.Get on the hot path
		switch strings.ToLower(v[0]) {
		case "true":
			return true, "server asked for a retry (x-should-retry)"
		case "false":
			return false, ""
		}
	}
	if !p.retryable.has(resp.StatusCode) {
		return false, ""
	}
	if resp.StatusCode == http.StatusTooManyRequests && quotaExhausted(resp) {
		return false, ""
	}
	return true, "status " + strconv.Itoa(resp.StatusCode)
}

// quotaExhausted reads the start of a 429 body, looks for a quota marker, and puts the bytes
// back in front of the rest of the body.
func quotaExhausted(resp *http.Response) bool {
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	head := make([]byte, quotaPeekLimit)
	n, err := io.ReadFull(resp.Body, head)
	head = head[:n]
	rest := resp.Body
	if err != nil { // the whole body fit (EOF) or reading failed: either way nothing more to read
		_ = rest.Close()
		resp.Body = io.NopCloser(bytes.NewReader(head))
	} else {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), rest), rest}
	}
	lower := bytes.ToLower(head)
	for _, m := range quotaMarkers {
		if bytes.Contains(lower, m) {
			return true
		}
	}
	return false
}

// classifyError decides whether a transport error is worth another attempt. It retries what
// a fresh connection may cure — refused, reset, EOF before a response, our attempt timeout, a
// network timeout, a temporary DNS failure — and never the caller's cancellation, TLS and
// certificate failures, an unsupported scheme or anything it does not recognise.
func classifyError(err error) (bool, string) {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.Kind == TimeoutAttempt, "attempt timeout"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, ""
	}
	var (
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recErr     tls.RecordHeaderError
	)
	if errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) ||
		errors.As(err, &invalidErr) || errors.As(err, &recErr) {
		return false, ""
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return true, "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true, "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true, "connection closed before a response"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTemporary || dnsErr.IsTimeout, "temporary DNS failure"
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true, "network timeout"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true, "dial failed"
	}
	msg := err.Error()
	if strings.Contains(msg, "server closed idle connection") || strings.Contains(msg, "GOAWAY") {
		return true, "connection closed by server"
	}
	return false, ""
}

// serverHint returns the wait the server asked for: retry-after-ms first (OpenAI, Azure),
// then Retry-After in seconds or as an HTTP date. A date in the past means "now".
func serverHint(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 && ms < math.MaxInt64/1e6 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > math.MaxInt64/1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}
