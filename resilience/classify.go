package resilience

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/steadyllm/steady/internal/signals"
)

// quotaPeekLimit is how much of a 429 body is read to tell an exhausted quota (permanent)
// from a rate limit (transient). Provider error envelopes are a few hundred bytes.
const quotaPeekLimit = 8 << 10

// classifyResponse decides whether a response is worth another attempt, and why. Only an
// error status (400 and above) is ever retried: a success, whatever its headers say, was
// billed and must not be sent again. For an error status, x-should-retry overrides the
// status when the server sends a clear answer; a 429 whose body says the quota is exhausted
// is permanent. Peeking at that body leaves it intact for the caller.
func (p *Policy) classifyResponse(resp *http.Response) (bool, string) {
	if resp.StatusCode < http.StatusBadRequest {
		return false, ""
	}
	if len(resp.Header["X-Should-Retry"]) > 0 { // canonical key: no Header.Get on the hot path
		if retry, ok := signals.ShouldRetry(resp.Header); ok {
			if retry {
				return true, "server asked for a retry (x-should-retry)"
			}
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
	return signals.MentionsQuotaBytes(head)
}

// classifyError decides whether a transport error is worth another attempt. It retries what
// a fresh connection may cure — refused, reset, EOF before a response, our attempt timeout, a
// network timeout, a temporary DNS failure — and never the caller's cancellation, TLS and
// certificate failures, an unsupported scheme or anything it does not recognise.
func classifyError(err error) (bool, string) {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.Limit == TimeoutAttempt, "attempt timeout"
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
