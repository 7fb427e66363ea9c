package providers

// ErrorKind classifies a failure so a program can act on it without parsing messages. What a
// kind implies — may the call succeed later, should a fallback chain move on, is the provider
// unwell — is defined once, in the table below, and read through the kind's methods.
type ErrorKind string

// The error kinds.
const (
	KindRateLimited     ErrorKind = "rate_limited"     // 429: wait RetryAfter and try again
	KindQuotaExhausted  ErrorKind = "quota_exhausted"  // 429 insufficient_quota / spend limit: waiting will not help
	KindOverloaded      ErrorKind = "overloaded"       // 529 or an overloaded error inside a stream
	KindUnavailable     ErrorKind = "unavailable"      // 5xx, network failure, a broken or oversized answer
	KindTimeout         ErrorKind = "timeout"          // the pipeline's own timeout
	KindCircuitOpen     ErrorKind = "circuit_open"     // rejected by an open circuit, nothing sent
	KindBulkheadFull    ErrorKind = "bulkhead_full"    // rejected by a full bulkhead, nothing sent
	KindAuth            ErrorKind = "auth"             // 401, 403: this provider's key or account is wrong
	KindNotFound        ErrorKind = "not_found"        // 404: this provider does not serve the model (or the endpoint)
	KindRedirected      ErrorKind = "redirected"       // the server redirected; steady never follows (check BaseURL)
	KindBadRequest      ErrorKind = "bad_request"      // 400, 422…: the request itself is wrong
	KindContextTooLong  ErrorKind = "context_too_long" // the prompt exceeds the model's context window
	KindContentFiltered ErrorKind = "content_filtered" // a safety filter refused the prompt or cut the output
	KindRefused         ErrorKind = "refused"          // the model declined to answer (its refusal is the outcome)
	KindStreamTruncated ErrorKind = "stream_truncated" // the stream ended before its finish reason
	KindCanceled        ErrorKind = "canceled"         // the caller's context ended
	// KindBudgetExhausted: the call would cross a spend budget of the application's (package
	// cost); not sent. RetryAfter is the time until the budget's window ends.
	KindBudgetExhausted ErrorKind = "budget_exhausted"
	KindUnknown         ErrorKind = "unknown"
)

// kindTraits is what each kind implies. Every kind is in the table, those with none of the
// traits too: it is the list Kinds returns.
var kindTraits = map[ErrorKind]struct {
	temporary     bool // the same request may succeed later at the same provider
	fallsBack     bool // the provider's fault, not the request's: the next provider may serve it
	unwell        bool // a failure inside a 200 stream that counts against the provider's circuit
	misconfigured bool // the route's configuration fails every call until someone fixes it
}{
	// The request's or the caller's: none of the traits.
	KindBadRequest: {}, KindContextTooLong: {}, KindContentFiltered: {}, KindCanceled: {}, KindUnknown: {},

	KindRateLimited:     {temporary: true, fallsBack: true},
	KindQuotaExhausted:  {fallsBack: true},
	KindOverloaded:      {temporary: true, fallsBack: true, unwell: true},
	KindUnavailable:     {temporary: true, fallsBack: true, unwell: true},
	KindTimeout:         {temporary: true, fallsBack: true, unwell: true},
	KindCircuitOpen:     {temporary: true, fallsBack: true},
	KindBulkheadFull:    {temporary: true, fallsBack: true},
	KindStreamTruncated: {temporary: true, fallsBack: true, unwell: true},
	KindAuth:            {fallsBack: true, misconfigured: true},
	KindNotFound:        {fallsBack: true, misconfigured: true},
	KindRedirected:      {fallsBack: true, misconfigured: true},
	// A refusal is the model's answer, not ill health, and another provider's model would most
	// likely refuse too: no trait. A caller's policy may still fall back on it (the client
	// lets one).
	KindRefused: {},
	// The application's own budget refused the call before any provider was asked: no
	// provider's fault (no fallback, no circuit), but it passes when the budget's window ends
	// (RetryAfter), so a job queue may run it again then.
	KindBudgetExhausted: {temporary: true},
}

// Temporary reports whether the same request may succeed later at the same provider: rate
// limits, overload, unavailability, timeouts, open circuits, full bulkheads and truncated
// streams.
func (k ErrorKind) Temporary() bool { return kindTraits[k].temporary }

// FallsBack reports whether the failure is the provider's rather than the request's, so that
// a fallback chain moves on to the next provider: everything Temporary, an exhausted quota, a
// rejected key or account (auth), a model the provider does not serve (not_found), a redirect.
// A malformed request, a prompt past the context window, a content filter, a refusal and the
// caller's own cancellation stop the chain: the next provider would fail the same way (a
// refusal or a filter may be a policy's reason to try another model all the same; that is the
// caller's choice, not the kind's).
func (k ErrorKind) FallsBack() bool { return kindTraits[k].fallsBack }

// Unwell reports whether a failure met while reading a 200 stream counts against the
// provider's circuit breaker: overload, a broken connection or a limit, a timeout, a stream cut
// short. A refusal or a content filter is an answer, never ill health. (Failures that come
// with an HTTP status are judged by the pipeline itself.)
func (k ErrorKind) Unwell() bool { return kindTraits[k].unwell }

// Misconfigured reports whether the failure is the configuration's, which fails every call of
// the route until someone fixes it, without the provider being down: a key refused (auth), a
// model or deployment name the server does not know (not_found), a base URL that redirects
// (redirected). Such a failure never opens a circuit for the caller's mistake, yet operators
// must see it: the client marks the route failing (resilience.Pipeline.NoteFailing).
func (k ErrorKind) Misconfigured() bool { return kindTraits[k].misconfigured }
