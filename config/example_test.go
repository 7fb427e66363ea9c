package config_test

import (
	"errors"
	"fmt"

	"github.com/steadyllm/steady/config"
)

// Load reads the files, then the environment. LoadWithEnv takes the environment explicitly;
// Load(paths...) is LoadWithEnv(os.Environ(), paths...).
func ExampleLoad() {
	cfg, err := config.LoadWithEnv([]string{
		"LLM__Resilience__RetryCount=5",
		"LLM__Providers__openai__Model=gpt-4.1-mini",
		"OPENAI_API_KEY=sk-…", // every APIKeyEnv must name a variable that is set
		"AZURE_OPENAI_API_KEY=…",
		"ANTHROPIC_API_KEY=sk-ant-…",
	}, "../examples/config/appsettings.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("retries:", cfg.Resilience.RetryCount)
	for _, name := range cfg.Fallback {
		p := cfg.Providers[name]
		o := p.EffectiveResilience()
		fmt.Printf("%s: %s %s, policy %q, %d retries, timeout %gs\n",
			name, p.Dialect, p.Model, p.Policy, o.RetryCount, o.TimeoutSeconds)
	}
	// Output:
	// retries: 5
	// openai: openai gpt-4.1-mini, policy "interactive", 1 retries, timeout 15s
	// azure: azure gpt-4o-deployment, policy "interactive", 1 retries, timeout 20s
	// anthropic: anthropic claude-sonnet-4-5, policy "batch", 6 retries, timeout 600s
	// local: openai-compatible llama3.2, policy "", 0 retries, timeout 30s
}

func ExampleParse() {
	// docs:begin parse
	_, err := config.Parse([]byte(`{
	  "LLM": {
	    "Resilience": { "RetryCont": 5, "TimeoutSeconds": "2m" },
	    "Providers": { "openai": { "Dialect": "openai", "ApiKey": "sk-…" } }
	  }
	}`))
	var cerr *config.Error
	if errors.As(err, &cerr) {
		for _, p := range cerr.Problems {
			fmt.Println(p.Path+":", p.Allowed)
		}
	}
	// docs:end parse

	// Output:
	// LLM.Providers.openai.ApiKey: an API key must not be written into the configuration: put it in an environment variable and name that variable in APIKeyEnv
	// LLM.Resilience.RetryCont: unknown key; did you mean RetryCount?
	// LLM.Providers.openai.APIKeyEnv: is required for Dialect "openai": the name of the environment variable that holds the API key
}

// The environment alone can configure steady. A map entry keyed by a model name with a hyphen
// cannot be exported from bash as LLM__Providers__azure__Deployments__gpt-4o; the map's own
// variable takes a JSON object instead. With no file and no LLM__ variable, there is nothing
// to load, and that is an error rather than a client with no provider.
func ExampleLoadWithEnv() {
	cfg, err := config.LoadWithEnv([]string{
		"LLM__Providers__azure__Dialect=azure",
		"LLM__Providers__azure__BaseURL=https://my-resource.openai.azure.com",
		"LLM__Providers__azure__APIKeyEnv=AZURE_OPENAI_API_KEY",
		`LLM__Providers__azure__Deployments={"gpt-4o": "prod-gpt4o", "gpt-4.1": "prod-gpt41"}`,
		"AZURE_OPENAI_API_KEY=…",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	az := cfg.Providers["azure"]
	fmt.Println(az.Dialect, az.Deployments["gpt-4o"], az.Deployments["gpt-4.1"])

	_, err = config.LoadWithEnv([]string{"HOME=/home/app"})
	fmt.Println(err)
	// Output:
	// azure prod-gpt4o prod-gpt41
	// config: no LLM section found: no configuration file was given and no LLM__ environment variable is set
}
