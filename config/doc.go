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
// The schema, all under the top-level LLM object (other top-level keys belong to the rest of
// the application and are ignored):
//
//   - LLM.Resilience: the fields of [resilience.Options] (RetryCount, TimeoutSeconds, …) over
//     [resilience.DefaultOptions]. A …Seconds field takes a number (floats allowed) or a Go
//     duration string such as "750ms".
//   - LLM.Policies.<name>: named policies, partial Resilience objects over LLM.Resilience.
//   - LLM.Providers.<name>: Dialect, the wire format the provider speaks: "openai", "azure",
//     "openai-compatible" or "anthropic" (the key was called Type, which is still accepted;
//     setting both is an error). Then BaseURL, APIKeyEnv (the name of the variable holding
//     the key), Model, Policy (a policy name), Resilience (overrides over the policy, or over
//     LLM.Resilience) and the settings of its dialect: API, "chat_completions" (the default)
//     or "responses" (openai, azure, openai-compatible), APIVersion and Deployments (azure),
//     Organization (openai, openai-compatible), Prefill (openai-compatible: "prefix" or
//     "continue_final_message"), Version, Beta and DefaultMaxTokens (anthropic); for every
//     dialect, ContextWindow (tokens, 0..100000000; 0 declares none) and ContextWindows
//     (model → tokens, for the models that differ), Continuation and Continuations ("prefill",
//     "prompt" or "none", for every model and by model), the same on every deployment of a
//     provider; see [Provider] for all of them.
//   - LLM.Fallback: provider names, in the order to try them.
//   - LLM.FallbackOn: by error kind (those of providers.Kinds but canceled, in any case:
//     "context_too_long", "refused", "rate_limited"…), the provider names a call that fails
//     with it goes to, instead of the rest of LLM.Fallback; an empty list stops the chain on
//     that kind. See [Config].
//   - LLM.FailoverAfterSeconds, LLM.Routing, LLM.VerifyAtStart: see [Config].
//   - LLM.SharedState: the store the instances of the application share their circuit state,
//     pauses and budgets through ([SharedState]: Address, Prefix, DB, UsernameEnv, PasswordEnv,
//     TLS, PollIntervalSeconds, TimeoutSeconds, FailClosed).
//
// The section must be there: a load in which no file has a top-level LLM key and no variable
// starts with LLM__ is an error ("no LLM section found"), not the defaults with no provider.
// A file may leave the section to another one (an overlay that only sets logging), but a
// top-level key spelt close to LLM that holds LLM settings ("LMM", "LLMs", "Llm_") is an error
// wherever it is: its settings would be lost. See [Load].
//
// Sources are merged with koanf in this order, each overriding the one before key by key:
// the defaults, each file in order (or the document Parse is given), the environment — the
// process's for Load and Parse, the one given for LoadWithEnv and ParseWithEnv. Environment
// variables follow the .NET convention, "__" between levels and list elements by index:
//
//	LLM__Resilience__RetryCount=5
//	LLM__Providers__openai__BaseURL=https://proxy.internal/v1
//	LLM__Providers__openai__Dialect=openai
//	LLM__Fallback__0=anthropic
//	LLM__FallbackOn__context_too_long__0=large
//
// A map (Deployments, ModelMap, Routing, ContextWindows) is set entry by entry, the key as the
// last segment, or as a whole, a JSON object in the map's own variable; either way its entries
// merge into the files' map one by one:
//
//	LLM__Providers__azure__Deployments__gpt-4o=prod-gpt4o
//	LLM__Providers__azure__Deployments={"gpt-4o": "prod-gpt4o", "gpt-4.1": "prod-gpt41"}
//	LLM__Providers__openai__ContextWindows={"gpt-4.1": 1047576}
//
// LLM.FallbackOn's lists are set by index too, or several kinds' at once, each whole, by a
// JSON object in LLM__FallbackOn, which can also set an empty list:
//
//	LLM__FallbackOn={"refused": ["other"], "unavailable": []}
//
// Model names hold hyphens and dots, which bash's export refuses in a variable's name, as do
// some hosts (AWS Lambda; Azure App Service, for hyphens). The JSON form has a plain name. The
// entry form can still be passed by env(1) ('env "LLM__…__gpt-4o=prod-gpt4o" ./app'), docker
// run -e, a Compose file or a Kubernetes env: entry, none of which refuse such names.
//
// Guarantees:
//
//   - Keys, and policy and provider names, are case-insensitive, in files and variables alike;
//     names keep the spelling of their first declaration. Map keys (model names) are not.
//   - Nothing is silently ignored under LLM: an unknown key or LLM__ variable is an error, with
//     a suggestion for a near miss ("RetryCont": did you mean RetryCount?).
//   - All problems are reported at once in an *[Error], each with its source, JSON path, the
//     value found (at most 64 bytes, control characters escaped) and what is allowed. A value
//     an environment variable set is reported by that variable's name (and its path), also
//     when only the checks of the merged configuration find it wrong. A failed load returns a
//     nil *Config, never a partial one.
//   - Every number is finite: NaN and infinities ("NaN", "Inf", "infinity" in a variable) are
//     refused, as is a duration past what Go can hold ("9999999999h").
//   - A Config holds no secret: an API key written into a file or an LLM__ variable is refused,
//     and the error does not repeat it. Whatever is written in UsernameEnv or PasswordEnv is
//     never shown in an error, since it may be the password put in the wrong place. Keys and
//     passwords are read from the environment when needed.
//   - Every resilience.Options in a Config passes Validate; every name it refers to exists.
package config
