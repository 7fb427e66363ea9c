// Package interop proves that the fake LLM server in github.com/steadyllm/steady/mocks is
// faithful to the real APIs: its tests drive the fake with the official clients,
// github.com/openai/openai-go/v3 and github.com/anthropics/anthropic-sdk-go, and check that
// replies parse into the expected content and usage, that error statuses come back as each
// SDK's own typed error, and that each SDK's own retry logic reacts to the fake's retry-after-ms
// and x-should-retry headers as it does against the real APIs.
//
// It is a separate module so that steady's own go.mod does not depend on the SDKs. The package
// has no code of its own; run its tests with:
//
//	cd interop && go test -race ./...
package interop
