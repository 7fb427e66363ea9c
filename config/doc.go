// Package config loads steady's settings, the LLM section of an appsettings.json-style file,
// from JSON files and the environment, and validates them.
//
//	cfg, err := config.Load("appsettings.json", "appsettings.Production.json")
//	if err != nil {
//		log.Fatal(err) // every problem at once, each with its JSON path
//	}
//	p := cfg.Providers["openai"]
//	key, err := p.APIKey()                 // read from the variable named by APIKeyEnv
//	pipeline, err := resilience.New(p.EffectiveResilience())
//
// The schema, all under the top-level LLM object (other top-level keys are ignored):
//
//   - LLM.Resilience: the fields of [resilience.Options] (RetryCount, TimeoutSeconds, …) over
//     [resilience.DefaultOptions]. A …Seconds field takes a number (floats allowed) or a Go
//     duration string such as "750ms".
//   - LLM.Policies.<name>: named policies, partial Resilience objects over LLM.Resilience.
//   - LLM.Providers.<name>: Type (openai, azure, openai-compatible, anthropic), BaseURL,
//     APIKeyEnv (the name of the variable holding the key), Model, APIVersion (azure), Policy
//     (a policy name) and Resilience (overrides over the policy, or over LLM.Resilience).
//   - LLM.Fallback: provider names, in the order to try them.
//   - LLM.FailoverAfterSeconds, LLM.Routing: see [Config].
//   - LLM.SharedState: the store the instances of the application share their circuit state,
//     pauses and budgets through ([SharedState]: Address, Prefix, DB, UsernameEnv, PasswordEnv,
//     TLS, PollIntervalSeconds, TimeoutSeconds, FailClosed).
//
// Sources are merged with koanf in this order, each overriding the one before key by key:
// the defaults, each file in order, the environment. Environment variables follow the .NET
// convention, "__" between levels and list elements by index:
//
//	LLM__Resilience__RetryCount=5
//	LLM__Providers__openai__BaseURL=https://proxy.internal/v1
//	LLM__Fallback__0=anthropic
//
// Guarantees:
//
//   - Keys, and policy and provider names, are case-insensitive, in files and variables alike;
//     names keep the spelling of their first declaration.
//   - Nothing is silently ignored under LLM: an unknown key or LLM__ variable is an error, with
//     a suggestion for a near miss ("RetryCont": did you mean RetryCount?).
//   - All problems are reported at once in an *[Error], each with its source, JSON path, the
//     value found and what is allowed. A failed load returns a nil *Config, never a partial one.
//   - A Config holds no secret: an API key written into a file or an LLM__ variable is refused,
//     and the error does not repeat it. Keys are read from the environment when needed.
//   - Every resilience.Options in a Config passes Validate; every name it refers to exists.
package config
