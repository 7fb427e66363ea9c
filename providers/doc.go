// Package providers defines the provider-agnostic request, response, stream and error types
// that steady's client speaks, and the Provider interface that turns them into calls to one
// LLM API (OpenAI, Azure OpenAI, an OpenAI-compatible server, Anthropic).
//
// A Provider makes exactly one HTTP exchange per call over the *http.Client it was built with,
// which the client gives it already wrapped in a resilience pipeline: the pipeline is the only
// retry layer, so providers never retry and official SDKs get their retries switched off.
//
// Providers turn every failure into a *Error whose Kind a program can act on (rate limited,
// overloaded, quota exhausted, context too long…), with the HTTP status, the server's
// retry-after hint and its request ID. An Error never carries the API key.
//
// For telemetry, a provider may describe itself (Describer: its GenAI system and default
// model), and the client reports each logical call in the neutral terms of CallStart,
// TryResult and CallTracker, so that an implementation (package observe) needs neither the
// client nor any provider SDK. These records hold a request's parameters and counts, never
// its messages.
package providers
