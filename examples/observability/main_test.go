package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestObservability_ShowsLogsMetricsAndTrace(t *testing.T) {
	var out, logs bytes.Buffer
	if err := run(context.Background(), &out, &logs); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), logs.String())
	}
	got := out.String()
	for _, want := range []string{
		`answer from openai: "Hello from the fake LLM server!"`,
		"llm_resilience_retry_total\n",
		"1  attempt=1 model=gpt-4o-mini provider=openai",
		"1  attempt=2 model=gpt-4o-mini provider=openai",
		"llm_resilience_call_duration\n",
		"outcome=success provider=openai",
		"gen_ai.client.operation.duration\n",
		"gen_ai.client.token.usage\n",
		"gen_ai.token.type=input",
		"gen_ai.token.type=output",
		`span "chat gpt-4o-mini" (client,`,
		"gen_ai.provider.name = openai",
		"steady.attempts = 3",
		"steady.outcome = success",
		"event retry",
		"http.response.status_code=429,steady.attempt=1,steady.delay_ms=200,",
		"steady.server_hint=true",
		"http.response.status_code=503,steady.attempt=2,",
		"steady.server_hint=false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	log := logs.String()
	for _, want := range []string{
		`level=WARN msg="attempt 1 of 4 for openai (gpt-4o-mini) failed (status 429); next attempt in 200ms (server hint)"`,
		`level=WARN msg="attempt 2 of 4 for openai (gpt-4o-mini) failed (status 503); next attempt in `,
		"(backoff)",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("logs lack %q:\n%s", want, log)
		}
	}
	for _, secret := range []string{"sk-observability", "http://", "Authorization"} {
		if strings.Contains(got+log, secret) {
			t.Errorf("output holds %q", secret)
		}
	}
}
