package steady_test

import (
	"context"

	"errors"
	"go.uber.org/goleak"
	"strings"
	"testing"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sentinelKey = "sk-SENTINEL-steady-91c2"

func hello() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
}

func TestFromConfig_BuildsProvidersAndFallsBackAcrossWireFormats(t *testing.T) {
	openaiDown := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer openaiDown.Close()
	claude := mocks.NewServer(mocks.WithReply("Claude here."))
	defer claude.Close()
	// The keys are in the environment given to the loader, not in the process's: FromConfig
	// reads them there.
	env := []string{"STEADY_TEST_OPENAI_KEY=" + sentinelKey, "STEADY_TEST_ANTHROPIC_KEY=" + sentinelKey}
	c := clientFromJSON(t, `{"LLM": {
		"Resilience": {"RetryCount": 1, "RetryBaseDelaySeconds": 0.001, "RetryUseJitter": false},
		"Providers": {
			"openai": {"Type": "openai", "BaseURL": "`+openaiDown.OpenAIBaseURL()+`", "APIKeyEnv": "STEADY_TEST_OPENAI_KEY", "Model": "gpt-4o-mini"},
			"claude": {"Type": "anthropic", "BaseURL": "`+claude.AnthropicBaseURL()+`", "APIKeyEnv": "STEADY_TEST_ANTHROPIC_KEY", "Model": "claude-haiku-4-5",
			           "Resilience": {"CircuitBreakerThreshold": 2}}
		},
		"Fallback": ["openai", "claude"]}}`, env)
	resp, err := c.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "claude" || resp.Message.Content != "Claude here." {
		t.Fatalf("response %+v", resp)
	}
	if openaiDown.Journal().Len() != 2 {
		t.Fatalf("openai saw %d attempts, want 2 (RetryCount 1)", openaiDown.Journal().Len())
	}
	last, _ := claude.Journal().Last()
	if !strings.Contains(string(last.Body), `"model":"claude-haiku-4-5"`) || last.Path != "/v1/messages" {
		t.Fatalf("anthropic got %s %s", last.Path, last.Body)
	}
	if got := c.Pipeline("claude").Options().CircuitBreakerThreshold; got != 2 {
		t.Fatalf("claude's threshold %d, want its own override 2", got)
	}
	if c.Pipeline("openai").CircuitState() != resilience.CircuitClosed {
		t.Fatal("unexpected circuit state")
	}
}

func TestFromConfig_Errors(t *testing.T) {
	if _, err := steady.FromConfig(nil); err == nil {
		t.Fatal("FromConfig(nil)")
	}
	cfg, err := config.ParseWithEnv([]byte(`{"LLM": {"Providers": {
		"a": {"Type": "openai", "APIKeyEnv": "STEADY_TEST_KEY_A"},
		"b": {"Type": "anthropic", "APIKeyEnv": "STEADY_TEST_KEY_B"}}}}`), []string{"STEADY_TEST_KEY_A=x", "STEADY_TEST_KEY_B=y"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := steady.FromConfig(cfg); err == nil || !strings.Contains(err.Error(), "LLM.Fallback") {
		t.Fatalf("got %v, want a request for LLM.Fallback", err)
	}

	// A Config built by hand reads keys from the process environment; each missing key is
	// said once, naming the provider and the variable.
	hand := &config.Config{Providers: map[string]config.Provider{
		"a": {Name: "a", Dialect: config.DialectOpenAI, APIKeyEnv: "STEADY_TEST_UNSET_KEY_A"},
		"b": {Name: "b", Dialect: config.DialectAnthropic, APIKeyEnv: "STEADY_TEST_UNSET_KEY_B"},
	}, Fallback: []string{"a", "b"}}
	_, err = steady.FromConfig(hand)
	if !errors.Is(err, config.ErrNoAPIKey) || !strings.Contains(err.Error(), "STEADY_TEST_UNSET_KEY_A") ||
		!strings.Contains(err.Error(), "STEADY_TEST_UNSET_KEY_B") {
		t.Fatalf("got %v, want both missing variables named", err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.Count(line, "provider") != 1 || strings.Count(line, "steady:") != 1 {
			t.Fatalf("a fact said twice: %q", line)
		}
	}
}

// An unset key is a load error, for every provider type that needs one.
func TestConfig_UnsetKeyIsALoadError(t *testing.T) {
	for _, typ := range []string{"openai", "azure", "anthropic", "openai-compatible"} {
		doc := `{"LLM":{"Providers":{"p":{"Type":"` + typ + `","BaseURL":"https://x.example.com/v1","APIKeyEnv":"STEADY_UNSET_VAR"}}}}`
		_, err := config.ParseWithEnv([]byte(doc), nil)
		if err == nil || !strings.Contains(err.Error(), "LLM.Providers.p.APIKeyEnv") || !strings.Contains(err.Error(), "not set") {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	// An OpenAI-compatible server without a key omits APIKeyEnv.
	if _, err := config.ParseWithEnv([]byte(`{"LLM":{"Providers":{"p":{"Type":"openai-compatible","BaseURL":"http://127.0.0.1:1/v1"}}}}`), nil); err != nil {
		t.Fatal(err)
	}
}

// Every setting of a provider's Go Config can be set in LLM.Providers.<name> and reaches the
// provider.
func TestFromConfig_EveryProviderSettingReachesTheProvider(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	env := []string{"K=" + sentinelKey}
	cfg, err := config.ParseWithEnv([]byte(`{"LLM":{"Providers":{
		"openai": {"Type":"openai","BaseURL":"`+s.OpenAIBaseURL()+`","APIKeyEnv":"K","Model":"gpt-4o",
			"Organization":"org-42","OmitStreamUsage":true,"Limits":{"MaxResponseBytes":100000}},
		"azure": {"Type":"azure","BaseURL":"`+s.URL()+`","APIKeyEnv":"K","APIVersion":"2025-01-01",
			"Deployments":{"gpt-4o":"my-deployment"},"Limits":{"MaxEventBytes":65536,"MaxErrorBodyBytes":1024}},
		"claude": {"Type":"anthropic","BaseURL":"`+s.AnthropicBaseURL()+`","APIKeyEnv":"K","Model":"claude-haiku-4-5",
			"Version":"2023-06-01","Beta":["prompt-caching-2024-07-31","output-128k-2025-02-19"],"DefaultMaxTokens":777,
			"ModelMap":{"gpt-4o":"claude-sonnet-4-5"}}},
		"Fallback":["openai","azure","claude"]}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	c, err := steady.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx := context.Background()
	last := func() mocks.Request { r, _ := s.Journal().Last(); return r }

	st, err := c.ChatStream(ctx, hello())
	if err != nil {
		t.Fatal(err)
	}
	for range st.Deltas() {
	}
	st.Close()
	if r := last(); r.Header.Get("OpenAI-Organization") != "org-42" || strings.Contains(string(r.Body), "stream_options") {
		t.Fatalf("openai: organization %q, body %s", r.Header.Get("OpenAI-Organization"), r.Body)
	}

	az := c.Provider("azure")
	if _, err := az.Chat(ctx, &providers.ChatRequest{Model: "gpt-4o", Messages: hello().Messages}); err != nil {
		t.Fatal(err)
	}
	if r := last(); r.Path != "/openai/deployments/my-deployment/chat/completions" || r.Query != "api-version=2025-01-01" {
		t.Fatalf("azure: %s?%s", r.Path, r.Query)
	}

	// The chain falls back to claude with the mapped model.
	c.Pipeline("openai").Isolate()
	c.Pipeline("azure").Isolate()
	resp, err := c.Chat(ctx, &providers.ChatRequest{Model: "gpt-4o", Messages: hello().Messages})
	if err != nil || resp.Provider != "claude" {
		t.Fatalf("%v %+v", err, resp)
	}
	r := last()
	if r.Header.Get("Anthropic-Version") != "2023-06-01" ||
		r.Header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31,output-128k-2025-02-19" ||
		!strings.Contains(string(r.Body), `"max_tokens":777`) || !strings.Contains(string(r.Body), `"model":"claude-sonnet-4-5"`) {
		t.Fatalf("anthropic: headers %v body %s", r.Header, r.Body)
	}

	// The limits reach the providers: a small answer limit cuts a normal answer.
	tiny, err := config.ParseWithEnv([]byte(`{"LLM":{"Providers":{"openai":{"Type":"openai","BaseURL":"`+
		s.OpenAIBaseURL()+`","APIKeyEnv":"K","Model":"m","Limits":{"MaxResponseBytes":10}}}}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := steady.FromConfig(tiny)
	if err != nil {
		t.Fatal(err)
	}
	var le *providers.LimitError
	if _, err := tc.Chat(ctx, hello()); !errors.As(err, &le) || le.Max != 10 {
		t.Fatalf("got %v, want the configured 10-byte limit", err)
	}
}

// Settings a provider type does not use, and values out of range, are load errors naming the
// key.
func TestConfig_ProviderSettingsAreValidated(t *testing.T) {
	for doc, want := range map[string]string{
		`{"Type":"openai","APIKeyEnv":"K","Beta":["x"]}`:                                                  `Beta = a list: is only used with Dialect "anthropic"`,
		`{"Type":"anthropic","APIKeyEnv":"K","Deployments":{"a":"b"}}`:                                    `Deployments = an object: is only used with Dialect "azure"`,
		`{"Type":"anthropic","APIKeyEnv":"K","DefaultMaxTokens":-5}`:                                      "DefaultMaxTokens = -5: must be between 0",
		`{"Type":"openai","APIKeyEnv":"K","Limits":{"MaxEventBytes":-1}}`:                                 "Limits.MaxEventBytes = -1",
		`{"Type":"openai","APIKeyEnv":"K","Limits":{"MaxEvetBytes":1}}`:                                   "Limits.MaxEvetBytes: unknown key; did you mean MaxEventBytes?",
		`{"Type":"openai","APIKeyEnv":"K","OmitStreamUsage":"yes"}`:                                       "OmitStreamUsage = \"yes\": must be true or false",
		`{"Type":"azure","BaseURL":"https://x.example.com","APIKeyEnv":"K","Deployments":{"gpt-4o":""}}`:  `Deployments.gpt-4o = "": must name`,
		`{"Type":"openai-compatible","BaseURL":"http://127.0.0.1:1/v1","Capabilities":["chat","vision"]}`: `Capabilities[1] = "vision": must be one of: chat, streaming`,
	} {
		_, err := config.ParseWithEnv([]byte(`{"LLM":{"Providers":{"p":`+doc+`}}}`), []string{"K=x"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", doc, err, want)
		}
	}
	// And from the environment.
	cfg, err := config.ParseWithEnv([]byte(`{"LLM":{"Providers":{"az":{"Type":"azure","BaseURL":"https://x.example.com","APIKeyEnv":"K",
		"Deployments":{"a":"one"}},"claude":{"Type":"anthropic","APIKeyEnv":"K"}}}}`),
		[]string{"K=x", "LLM__Providers__az__Deployments__gpt-4o=dep", "LLM__Providers__claude__Beta__0=b1",
			"LLM__Providers__claude__Limits__MaxEventBytes=4096", "LLM__Providers__az__OmitStreamUsage=true"})
	if err != nil {
		t.Fatal(err)
	}
	az, claude := cfg.Providers["az"], cfg.Providers["claude"]
	if az.Deployments["a"] != "one" || az.Deployments["gpt-4o"] != "dep" || !az.OmitStreamUsage ||
		len(claude.Beta) != 1 || claude.Beta[0] != "b1" || claude.Limits.MaxEventBytes != 4096 {
		t.Fatalf("az %+v claude %+v", az, claude)
	}
}

// The named policies of LLM.Policies are the policies a call can ask for by name.
func TestFromConfig_NamedPoliciesServeCalls(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Resilience": {"RetryCount": 1, "RetryBaseDelaySeconds": 0.001, "RetryUseJitter": false, "RetryBudgetPercent": 0},
		"Policies": {"batch": {"RetryCount": 4}},
		"Providers": {
			"openai": {"Type": "openai", "BaseURL": "`+down.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini"}
		}}}`, []string{"K=" + sentinelKey})
	if _, err := c.Chat(context.Background(), hello(), client.WithPolicy("batch")); err == nil {
		t.Fatal("a failing server answered")
	}
	if n := down.Journal().Len(); n != 5 {
		t.Fatalf("%d attempts under the batch policy, want 5", n)
	}
}

// Capabilities of the configuration say what a compatible server serves: a call that needs
// more skips it.
func TestFromConfig_CapabilitiesSkipAServerThatLacksThem(t *testing.T) {
	local := mocks.NewServer(mocks.WithReply("local"))
	defer local.Close()
	claude := mocks.NewServer(mocks.WithReply("claude"))
	defer claude.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Providers": {
			"local": {"Dialect": "openai-compatible", "BaseURL": "`+local.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "llama",
			          "Capabilities": ["chat", "streaming", "structured_output"]},
			"claude": {"Type": "anthropic", "BaseURL": "`+claude.AnthropicBaseURL()+`", "APIKeyEnv": "K", "Model": "claude-haiku-4-5"}
		},
		"Fallback": ["local", "claude"]}}`, []string{"K=" + sentinelKey})
	req := hello()
	req.Messages[0] = providers.Message{Role: providers.RoleUser, Parts: []providers.Part{
		providers.ImagePart(providers.Image{URL: "https://example.com/a.png"})}}
	resp, err := c.Chat(context.Background(), req)
	if err != nil || resp.Provider != "claude" || local.Journal().Len() != 0 {
		t.Fatalf("%v %v; the local server saw %d requests", resp, err, local.Journal().Len())
	}
	if resp, err := c.Chat(context.Background(), hello(), client.WithoutFallback()); err != nil || resp.Provider != "local" {
		t.Fatalf("%v %v", resp, err)
	}
}

func TestFromConfig_FailoverAfterSeconds(t *testing.T) {
	for doc, want := range map[string]string{
		`"FailoverAfterSeconds": -1`:     "LLM.FailoverAfterSeconds = -1: must be between 0 and 3600",
		`"FailoverAfterSeconds": "soon"`: "LLM.FailoverAfterSeconds",
	} {
		if _, err := config.ParseWithEnv([]byte(`{"LLM": {`+doc+`}}`), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
	cfg, err := config.ParseWithEnv([]byte(`{"LLM": {"FailoverAfterSeconds": "750ms"}}`), []string{"LLM__FailoverAfterSeconds=0.25"})
	if err != nil {
		t.Fatal(err)
	}
	if f := cfg.FailoverAfterSeconds; f == nil || *f != 0.25 {
		t.Fatalf("FailoverAfterSeconds %v", f)
	}
}

// Entries with the same DeploymentOf form one provider of several deployments, routed by
// LLM.Routing and listed in LLM.Fallback by the group's name.
func TestFromConfig_DeploymentsFromEntries(t *testing.T) {
	a := mocks.NewServer(mocks.WithReply("a"))
	defer a.Close()
	b := mocks.NewServer(mocks.WithReply("b"))
	defer b.Close()
	claude := mocks.NewServer(mocks.WithReply("claude"))
	defer claude.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Providers": {
			"openai-east": {"Dialect": "openai", "BaseURL": "`+a.OpenAIBaseURL()+`", "APIKeyEnv": "KA", "Model": "gpt-4o-mini",
			                "DeploymentOf": "openai", "RequestsPerMinute": 500, "Weight": 2},
			"openai-west": {"Dialect": "openai", "BaseURL": "`+b.OpenAIBaseURL()+`", "APIKeyEnv": "KB", "Model": "gpt-4o-mini",
			                "DeploymentOf": "openai", "Resilience": {"RetryCount": 0}},
			"claude": {"Dialect": "anthropic", "BaseURL": "`+claude.AnthropicBaseURL()+`", "APIKeyEnv": "KA", "Model": "claude-haiku-4-5"}
		},
		"Routing": {"openai": "round_robin"},
		"Fallback": ["openai", "claude"]}}`, []string{"KA=" + sentinelKey, "KB=" + sentinelKey})
	for range 4 {
		resp, err := c.Chat(context.Background(), hello())
		if err != nil || resp.Provider != "openai" {
			t.Fatalf("%v %v", resp, err)
		}
	}
	if a.Journal().Len() != 2 || b.Journal().Len() != 2 || claude.Journal().Len() != 0 {
		t.Fatalf("east %d, west %d, claude %d", a.Journal().Len(), b.Journal().Len(), claude.Journal().Len())
	}
	deps := c.Deployments("openai")
	if len(deps) != 2 || deps[0].Name != "openai/openai-east" || deps[0].Headroom.RequestsPerMinute == 0 {
		t.Fatalf("deployments %+v", deps)
	}
	if got := c.Circuits(); got["openai/openai-west"] == nil || got["claude"] == nil || got["openai"] != nil {
		t.Fatalf("circuits %v", got)
	}
	if c.Circuits()["openai/openai-west"].Options().RetryCount != 0 {
		t.Fatal("a deployment lost its own Resilience")
	}
}

func TestConfig_DeploymentsAreValidated(t *testing.T) {
	for doc, want := range map[string]string{
		`"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "g"}}, "Routing": {"g": "fastest"}`:                  `LLM.Routing.g = "fastest": must be one of`,
		`"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K"}}, "Routing": {"g": "priority"}`:                                      "LLM.Routing.g",
		`"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "y"}, "y": {"Dialect": "openai", "APIKeyEnv": "K"}}`: "DeploymentOf",
		`"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "g"}}, "Fallback": ["x"]`:                            `LLM.Fallback[0] = "x": must name a provider`,
		`"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K", "Weight": -1}}`:                                                      "Weight = -1",
	} {
		if _, err := config.ParseWithEnv([]byte(`{"LLM": {`+doc+`}}`), []string{"K=x"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// The configuration's routing names are the client's.
func TestConfig_RoutingNamesAreTheClients(t *testing.T) {
	for _, s := range client.Strategies {
		if _, err := config.ParseWithEnv([]byte(`{"LLM": {"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "g"}},
			"Routing": {"g": "`+string(s)+`"}}}`), []string{"K=x"}); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestConfig_RoutingFromTheEnvironment(t *testing.T) {
	cfg, err := config.ParseWithEnv([]byte(`{"LLM": {"Providers": {"x": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "g"}}}}`),
		[]string{"K=x", "LLM__Routing__g=most_headroom", "LLM__Providers__x__Weight=3"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Routing["g"] != "most_headroom" || cfg.Providers["x"].Weight != 3 {
		t.Fatalf("routing %v, weight %d", cfg.Routing, cfg.Providers["x"].Weight)
	}
}

// clientFromJSON builds a client from a configuration document and its environment, and
// closes its idle connections when the test ends.
func clientFromJSON(t *testing.T, doc string, env []string) *client.Client {
	t.Helper()
	cfg, err := config.ParseWithEnv([]byte(doc), env)
	if err != nil {
		t.Fatal(err)
	}
	c, err := steady.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// LLM.SharedState without its driver linked in is an error that says which import is missing.
func TestFromConfig_SharedStateNeedsItsDriver(t *testing.T) {
	cfg, err := config.ParseWithEnv([]byte(`{"LLM": {"Providers": {"local": {"Dialect": "openai-compatible",
		"BaseURL": "http://127.0.0.1:1/v1"}}, "SharedState": {"Address": "127.0.0.1:6379"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = steady.FromConfig(cfg)
	if err == nil || !strings.Contains(err.Error(), `import _ "github.com/steadyllm/steady/state/redis"`) {
		t.Fatalf("got %v", err)
	}
}

// LLM.Providers.<name>.API "responses" makes an OpenAI-dialect provider call the Responses API,
// with its other settings: the organization, Azure's deployments (on Azure's v1 path).
func TestFromConfig_APIResponsesCallsTheResponsesAPI(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	c := clientFromJSON(t, `{"LLM":{"Providers":{
		"openai": {"Dialect":"openai","API":"Responses","BaseURL":"`+s.OpenAIBaseURL()+`","APIKeyEnv":"K","Model":"gpt-4o","Organization":"org-42"},
		"azure": {"Dialect":"azure","API":"responses","BaseURL":"`+s.URL()+`","APIKeyEnv":"K","Model":"gpt-4o","Deployments":{"gpt-4o":"dep"}}},
		"Fallback":["openai","azure"]}}`, []string{"K=" + sentinelKey})
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Stored == nil || resp.Message.Content != "ok" {
		t.Fatalf("%v %+v", err, resp)
	}
	if r, _ := s.Journal().Last(); r.Path != "/v1/responses" || r.Header.Get("OpenAI-Organization") != "org-42" {
		t.Fatalf("openai: %s %v", r.Path, r.Header)
	}
	if _, err := c.Chat(context.Background(), hello(), client.WithProviders("azure")); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Journal().Last(); r.Path != "/openai/v1/responses" || !strings.Contains(string(r.Body), `"model":"dep"`) {
		t.Fatalf("azure: %s %s", r.Path, r.Body)
	}
}

// LLM.Providers.<name>.ThinkingModes reaches the Anthropic provider.
func TestFromConfig_ThinkingModesReachTheProvider(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := clientFromJSON(t, `{"LLM":{"Providers":{"claude": {"Dialect":"anthropic","BaseURL":"`+s.AnthropicBaseURL()+
		`","APIKeyEnv":"K","Model":"claude-sonnet-4-5","ThinkingModes":{"claude-sonnet-4-5":"adaptive"}}}}}`, []string{"K=" + sentinelKey})
	req := hello()
	req.MaxTokens, req.Reasoning = 4096, &providers.Reasoning{BudgetTokens: 2048}
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Journal().Last(); !strings.Contains(string(r.Body), `"thinking":{"type":"adaptive"}`) {
		t.Fatalf("body %s", r.Body)
	}
}

// LLM.Providers.<name>.CountTokens reaches the Anthropic provider: with a tokens-per-minute limit, each
// call is counted before it is sent.
func TestFromConfig_CountTokensReachesTheProvider(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := clientFromJSON(t, `{"LLM":{"Providers":{"claude": {"Dialect":"anthropic","BaseURL":"`+s.AnthropicBaseURL()+
		`","APIKeyEnv":"K","Model":"claude-sonnet-4-5","CountTokens":true,"CountTimeoutSeconds":5,"Resilience":{"PaceTokensPerMinute":100000}}}}}`, []string{"K=" + sentinelKey})
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/messages/count_tokens" || reqs[1].Path != "/v1/messages" {
		t.Fatalf("%d requests: %v", len(reqs), reqs)
	}
	if n, err := c.CountTokens(context.Background(), hello()); err != nil || n.Input != mocks.Tokens("hello there") {
		t.Fatalf("%+v %v", n, err)
	}
}

// A provider's own RequestsPerMinute and TokensPerMinute pace its pipeline, as a deployment's
// do: configured limits are never silently unused.
func TestFromConfig_ProviderLimitsPaceIt(t *testing.T) {
	srv := mocks.NewServer()
	defer srv.Close()
	c := clientFromJSON(t, `{"LLM": {"Providers": {
		"openai": {"Type": "openai", "BaseURL": "`+srv.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini",
			"RequestsPerMinute": 120, "TokensPerMinute": 9000},
		"other": {"Type": "openai", "BaseURL": "`+srv.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini"}
	}, "Fallback": ["openai", "other"]}}`, []string{"K=" + sentinelKey})
	o := c.Pipeline("openai").Options()
	if o.PaceRequestsPerMinute != 120 || o.PaceTokensPerMinute != 9000 || !c.Pipeline("openai").Paced() {
		t.Errorf("the provider's limits: pace %d rpm, %d tpm, paced %v", o.PaceRequestsPerMinute, o.PaceTokensPerMinute, c.Pipeline("openai").Paced())
	}
	if o := c.Pipeline("other").Options(); o.PaceRequestsPerMinute != 0 || o.PaceTokensPerMinute != 0 {
		t.Errorf("a provider without limits is paced: %d rpm, %d tpm", o.PaceRequestsPerMinute, o.PaceTokensPerMinute)
	}
}
