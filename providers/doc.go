// Package providers is steady's neutral LLM API: the provider-agnostic request, response,
// stream and error types that the client speaks, and the Provider interface — with its
// contract: one exchange per call, no retries, every body closed and bounded, typed errors —
// that turns them into calls to one LLM API (OpenAI, Azure OpenAI, an OpenAI-compatible server,
// Anthropic; packages providers/openai and providers/anthropic).
//
// Every failure is a *Error whose Kind a program acts on; what a kind implies (may the call
// succeed later, should a fallback chain move on) is defined once, on ErrorKind. Requests are
// checked before sending (ChatRequest.Validate), providers declare what they can do
// (Capabilities, through Describer), and Limits bounds what a provider reads from a server.
//
// The package depends on the standard library only. The helpers steady's own providers share
// to read a server safely (classification, hints, scrubbing, limits) are internal: a
// third-party provider needs only this package's types, and may return the errors of its
// http.Client as they are, for the client to map.
package providers
