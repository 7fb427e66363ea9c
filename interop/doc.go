// Package interop proves that the fake LLM server in github.com/steadyllm/steady/mocks is
// faithful to the real APIs: its tests drive the fake with the official clients,
// github.com/openai/openai-go/v3 and github.com/anthropics/anthropic-sdk-go, and check that
// replies parse into the expected content and usage, that error statuses come back as each
// SDK's own typed error, and that each SDK's own retry logic reacts to the fake's retry-after-ms
// and x-should-retry headers as it does against the real APIs.
//
// The aimock tests (aimock_test.go) get a second, independent opinion on the wire formats:
// they start @copilotkit/aimock, the npm package pinned in aimock/package.json, on 127.0.0.1
// and check that steady's providers and client read its answers, streams, tool calls,
// embeddings and errors as its fixtures wrote them, in both wire formats. They are skipped
// where node is not installed, and fail where it is but the package is not: install it with
// `npm ci --prefix interop/aimock` from the repository root.
//
// otelhttp_linux_test.go runs the resilience pipeline over a base wrapped by the real
// otelhttp.Transport and checks that the stream idle limit still measures silence on the wire.
//
// It is a separate module so that steady's own go.mod does not depend on the SDKs (nor on
// otelhttp). The package
// has no code of its own; run its tests with:
//
//	cd interop && go test -race ./...
package interop
