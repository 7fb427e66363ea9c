package resilience

import (
	"net/http"
	"net/url"
)

// refuseRedirect turns a redirect response into a *RedirectError, closing its body. It runs at
// the pipeline's outer edge, so whatever http.Client sits above never sees a redirect to
// follow: Go's client would resend the body on 307/308, and it strips only Authorization and
// Cookie, only when the host name changes and never for another port, so x-api-key, api-key
// and the body would reach whoever the Location names. Below the edge the redirect is an
// ordinary 3xx: not retried, not a failure for the circuit (it says nothing of the server's
// health). A 3xx without a Location is not a redirect a client follows and passes unchanged.
func refuseRedirect(name string, resp *http.Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	loc := resp.Header["Location"]
	if len(loc) == 0 || loc[0] == "" {
		return nil
	}
	drain(resp.Body, 4<<10)
	return &RedirectError{Pipeline: name, StatusCode: resp.StatusCode, Origin: origin(loc[0])}
}

// origin returns the scheme://host[:port] of an absolute URL, or "".
func origin(raw string) string {
	if len(raw) > 2048 {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
