package config

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/steadyllm/steady/internal/dialect"
	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/tokens"
)

// build decodes the merged, normalized LLM tree into a Config and checks what only the merged
// result can show: option ranges and relations, provider settings, references between names.
// Every problem goes to ps; the Config is only used when ps stays empty.
func build(llm map[string]any, ps *problems, env func(string) (string, bool)) *Config {
	cfg := &Config{
		Resilience: resilience.DefaultOptions(),
		Policies:   map[string]resilience.Options{},
		Providers:  map[string]Provider{},
	}
	apply(&cfg.Resilience, llm[keyResilience])
	rootPath := keyLLM + "." + keyResilience
	rootFaults := checkOptions(ps, rootPath, cfg.Resilience, nil)

	policyFaults := map[string]map[string]bool{}
	policies, _ := llm[keyPolicies].(map[string]any)
	for _, name := range sortedKeys(policies) {
		o := cloneOptions(cfg.Resilience)
		apply(&o, policies[name])
		cfg.Policies[name] = o
		policyFaults[name] = checkOptions(ps, joinPath(keyLLM+"."+keyPolicies, name), o, rootFaults)
	}

	policyNames := newIndex(cfg.Policies)
	providers, _ := llm[keyProviders].(map[string]any)
	for _, name := range sortedKeys(providers) {
		tree, _ := providers[name].(map[string]any)
		p := buildProvider(ps, cfg, name, tree, policyNames, rootFaults, policyFaults)
		p.lookup = env
		checkKey(ps, p)
		cfg.Providers[name] = p
	}

	groups := checkGroups(ps, cfg)
	checkGroupWindows(ps, cfg, groups)
	checkGroupProbes(ps, cfg, groups)
	routing, _ := llm[keyRouting].(map[string]string)
	cfg.Routing = checkRouting(ps, groups, routing)
	callable := map[string]bool{}
	for name, p := range cfg.Providers {
		if p.DeploymentOf == "" {
			callable[name] = true
		}
	}
	for g := range groups {
		callable[g] = true
	}
	fallback, _ := llm[keyFallback].([]string)
	cfg.Fallback = checkFallback(ps, newIndex(callable), fallback)
	fallbackOn, _ := llm[keyFallbackOn].(map[string]any)
	cfg.FallbackOn = checkFallbackOn(ps, newIndex(callable), fallbackOn)
	if f, ok := llm[keyFailover].(float64); ok {
		if !(f >= 0 && f <= 3600) { // written so that a NaN, had it come in, would fail too
			ps.add(Problem{Path: keyLLM + "." + keyFailover, Value: f, Allowed: "must be between 0 and 3600 seconds"})
		}
		cfg.FailoverAfterSeconds = &f
	}
	cfg.VerifyAtStart, _ = llm[keyVerify].(bool)
	if tree, ok := llm[keySharedState].(map[string]any); ok {
		cfg.SharedState = buildSharedState(ps, tree, env)
	}
	if tree, ok := llm[keyCost].(map[string]any); ok {
		members := map[string]string{}
		for name, p := range cfg.Providers {
			if p.DeploymentOf != "" {
				members[strings.ToLower(name)] = p.DeploymentOf
			}
		}
		cfg.Cost = buildCost(ps, tree, newIndex(callable), policyNames, members)
	}
	return cfg
}

// index finds names case-insensitively in constant time, so that a load stays linear in the
// number of names; the sorted list serves suggestions.
type index struct {
	byLower map[string]string
	sorted  []string
}

func newIndex[V any](m map[string]V) index {
	ix := index{byLower: make(map[string]string, len(m)), sorted: sortedKeys(m)}
	for _, n := range ix.sorted {
		ix.byLower[strings.ToLower(n)] = n
	}
	return ix
}

func (ix index) lookup(name string) (string, bool) {
	c, ok := ix.byLower[strings.ToLower(name)]
	return c, ok
}

func buildProvider(ps *problems, cfg *Config, name string, tree map[string]any, policies index,
	rootFaults map[string]bool, policyFaults map[string]map[string]bool) Provider {
	path := joinPath(keyLLM+"."+keyProviders, name)
	str := func(key string) string { s, _ := tree[key].(string); return s }
	smap := func(key string) map[string]string { m, _ := tree[key].(map[string]string); return cloneMap(m) }
	lim, _ := tree[keyLimits].(map[string]any)
	limit := func(key string) int64 { n, _ := lim[key].(int); return int64(n) }
	dmt, _ := tree[keyDefaultMaxTokens].(int)
	omit, _ := tree[keyOmitStreamUsage].(bool)
	countTokens, _ := tree[keyCountTokens].(bool)
	countTimeout, _ := tree[keyCountTimeout].(float64)
	beta, _ := tree[keyBeta].([]string)
	caps, _ := tree[keyCapabilities].([]string)
	weight, _ := tree[keyWeight].(int)
	rpm, _ := tree[keyRPM].(int)
	tpm, _ := tree[keyTPM].(int)
	window, _ := tree[keyContextWindow].(int)
	windows, _ := tree[keyContextWindows].(map[string]int)
	p := Provider{
		Name:                name,
		Dialect:             strings.ToLower(strings.TrimSpace(str(keyDialect))),
		BaseURL:             str(keyBaseURL),
		APIKeyEnv:           str(keyAPIKeyEnv),
		Model:               str(keyModel),
		APIVersion:          str(keyAPIVersion),
		Organization:        str(keyOrganization),
		Deployments:         smap(keyDeployments),
		OmitStreamUsage:     omit,
		Version:             str(keyVersion),
		DefaultMaxTokens:    dmt,
		Beta:                append([]string(nil), beta...),
		Capabilities:        append([]string(nil), caps...),
		DeploymentOf:        strings.TrimSpace(str(keyDeploymentOf)),
		Weight:              weight,
		RequestsPerMinute:   rpm,
		TokensPerMinute:     tpm,
		Limits:              providers.Limits{MaxResponseBytes: limit(keyMaxResponseBytes), MaxEventBytes: limit(keyMaxEventBytes), MaxErrorBodyBytes: limit(keyMaxErrorBodyBytes)},
		ModelMap:            smap(keyModelMap),
		ContextWindow:       window,
		ContextWindows:      maps.Clone(windows),
		ActiveProbe:         strings.ToLower(strings.TrimSpace(str(keyActiveProbe))),
		API:                 strings.ToLower(strings.TrimSpace(str(keyAPI))),
		ThinkingModes:       smap(keyThinkingModes),
		CountTokens:         countTokens,
		CountTimeoutSeconds: countTimeout,
		TokenEncoding:       strings.TrimSpace(str(keyTokenEncoding)),
		TokenEncodings:      smap(keyTokenEncodings),
		Prefill:             strings.ToLower(strings.TrimSpace(str(keyPrefill))),
		Continuation:        strings.ToLower(strings.TrimSpace(str(keyContinuation))),
		Continuations:       smap(keyContinuations),
	}
	for m, mode := range p.ThinkingModes {
		p.ThinkingModes[m] = strings.ToLower(strings.TrimSpace(mode))
	}
	for m, way := range p.Continuations {
		p.Continuations[m] = strings.ToLower(strings.TrimSpace(way))
	}
	if p.ActiveProbe == ProbeNone {
		p.ActiveProbe = ""
	}
	add := func(key string, value any, allowed string) {
		ps.add(Problem{Path: path + "." + key, Value: value, Allowed: allowed})
	}

	switch {
	case p.Dialect == "":
		add(keyDialect, nil, "is required: "+oneOf(providerDialects))
	case indexOf(providerDialects, p.Dialect) < 0:
		add(keyDialect, str(keyDialect), oneOf(providerDialects)+ps.didYouMean(p.Dialect, providerDialects))
	}
	if p.APIKeyEnv == "" && dialect.Known(p.Dialect) && dialect.NeedsKey(p.Dialect) {
		add(keyAPIKeyEnv, nil, fmt.Sprintf("is required for Dialect %q: the name of the environment "+
			"variable that holds the API key", p.Dialect))
	}
	checkBaseURL(add, p.Dialect, p.BaseURL)
	checkFieldTypes(add, p.Dialect, tree)
	if p.API != "" && indexOf(dialect.APIs, p.API) < 0 {
		add(keyAPI, str(keyAPI), oneOf(dialect.APIs)+ps.didYouMean(p.API, dialect.APIs))
	}
	checkProviderValues(add, p)

	parent, parentFaults := cfg.Resilience, rootFaults
	if ref := str(keyPolicy); ref != "" {
		if c, ok := policies.lookup(ref); ok {
			p.Policy = c
			parent, parentFaults = cfg.Policies[c], policyFaults[c]
		} else {
			add(keyPolicy, ref, "must name a policy of LLM.Policies"+ps.didYouMean(ref, policies.sorted))
			p.Policy = ref
		}
	}
	p.Resilience = cloneOptions(parent)
	apply(&p.Resilience, tree[keyResilience])
	checkOptions(ps, path+"."+keyResilience, p.Resilience, parentFaults)
	return p
}

// checkFieldTypes reports fields that the provider's dialect does not use (an APIVersion on
// an anthropic provider, a Beta on an OpenAI one), so that a setting never silently does
// nothing.
func checkFieldTypes(add func(key string, value any, allowed string), typ string, tree map[string]any) {
	if indexOf(providerDialects, typ) < 0 {
		return // the dialect is wrong: reported once, at Dialect
	}
	for _, key := range sortedKeys(tree) {
		f, ok := providerFields[key]
		if !ok || f.types == nil || indexOf(f.types, typ) >= 0 {
			continue
		}
		quoted := make([]string, len(f.types))
		for i, t := range f.types {
			quoted[i] = fmt.Sprintf("%q", t)
		}
		add(key, describe(tree[key]), fmt.Sprintf("is only used with Dialect %s, not %q", strings.Join(quoted, " or "), typ))
	}
}

// The values of Provider.ActiveProbe.
const (
	// ProbeChat tests an open circuit with a one-token chat (client.ChatProbe).
	ProbeChat = "chat"
	// ProbeNone, like "", leaves the test of an open circuit to the next caller's call.
	ProbeNone = "none"
)

// maxCountTimeout bounds CountTimeoutSeconds, as anthropic.MaxCountTimeout does: a count
// every call waits for must cost a fraction of the call.
const maxCountTimeout = 30

// maxContextWindow bounds a declared context window, as client.WithContextWindow does.
const maxContextWindow = 100_000_000

// maxLimit bounds each of Limits: a terabyte is past any sensible setting.
const maxLimit = 1 << 40

// checkProviderValues reports values out of range.
func checkProviderValues(add func(key string, value any, allowed string), p Provider) {
	if p.DefaultMaxTokens < 0 || p.DefaultMaxTokens > 10_000_000 {
		add(keyDefaultMaxTokens, p.DefaultMaxTokens, "must be between 0 (the provider's default) and 10000000")
	}
	for key, v := range map[string]int{keyWeight: p.Weight, keyRPM: p.RequestsPerMinute, keyTPM: p.TokensPerMinute} {
		if v < 0 || v > 100_000_000 {
			add(key, v, "must be between 0 and 100000000")
		}
	}
	if p.ActiveProbe != "" && p.ActiveProbe != ProbeChat {
		add(keyActiveProbe, p.ActiveProbe, fmt.Sprintf("must be %q (a one-token chat to the model whose circuit is open), "+
			"%q or empty (no active probe)", ProbeChat, ProbeNone))
	}
	if !(p.CountTimeoutSeconds >= 0 && p.CountTimeoutSeconds <= maxCountTimeout) { // a NaN fails too
		add(keyCountTimeout, p.CountTimeoutSeconds, fmt.Sprintf("must be between 0 (the provider's default, 2 s) and %d seconds", maxCountTimeout))
	}
	if p.ContextWindow < 0 || p.ContextWindow > maxContextWindow {
		add(keyContextWindow, p.ContextWindow, fmt.Sprintf("must be between 0 (none declared) and %d tokens", maxContextWindow))
	}
	for _, m := range sortedKeys(p.ContextWindows) {
		if n := p.ContextWindows[m]; n < 0 || n > maxContextWindow {
			add(joinPath(keyContextWindows, m), n, fmt.Sprintf("must be between 0 (none declared) and %d tokens", maxContextWindow))
		}
	}
	if msg := checkEncoding(p.TokenEncoding); msg != "" {
		add(keyTokenEncoding, p.TokenEncoding, msg)
	}
	for _, m := range sortedKeys(p.TokenEncodings) {
		if msg := checkEncoding(p.TokenEncodings[m]); msg != "" || strings.TrimSpace(p.TokenEncodings[m]) == "" {
			if msg == "" {
				msg = "must name an encoding"
			}
			add(joinPath(keyTokenEncodings, m), p.TokenEncodings[m], msg)
		}
	}
	for i, c := range p.Capabilities {
		if _, err := providers.ParseCapabilities([]string{c}); err != nil {
			add(fmt.Sprintf("%s[%d]", keyCapabilities, i), c, "must be one of: "+strings.Join(providers.CapabilityNames(), ", "))
		}
	}
	for i, b := range p.Beta {
		if strings.TrimSpace(b) == "" {
			add(fmt.Sprintf("%s[%d]", keyBeta, i), b, "must be a beta feature name, not empty")
		}
	}
	for _, l := range []struct {
		key string
		v   int64
	}{{keyMaxResponseBytes, p.Limits.MaxResponseBytes}, {keyMaxEventBytes, p.Limits.MaxEventBytes},
		{keyMaxErrorBodyBytes, p.Limits.MaxErrorBodyBytes}} {
		if l.v < 0 || l.v > maxLimit {
			add(keyLimits+"."+l.key, l.v, fmt.Sprintf("must be between 0 (the default) and %d bytes", int64(maxLimit)))
		}
	}
	if p.Prefill != "" && p.Prefill != PrefillPrefix && p.Prefill != PrefillContinueFinal {
		add(keyPrefill, p.Prefill, fmt.Sprintf("must be %q or %q, or empty for none", PrefillPrefix, PrefillContinueFinal))
	}
	continuation := fmt.Sprintf("must be %q, %q, %q, or empty for the provider's own", ContinuePrefill, ContinuePrompt, ContinueNone)
	if w := p.Continuation; w != "" && w != ContinuePrefill && w != ContinuePrompt && w != ContinueNone {
		add(keyContinuation, w, continuation)
	}
	for _, m := range sortedKeys(p.Continuations) {
		if w := p.Continuations[m]; w != "" && w != ContinuePrefill && w != ContinuePrompt && w != ContinueNone {
			add(joinPath(keyContinuations, m), w, continuation)
		}
	}
	for _, m := range sortedKeys(p.ThinkingModes) {
		if mode := p.ThinkingModes[m]; mode != ThinkingBudget && mode != ThinkingAdaptive {
			add(joinPath(keyThinkingModes, m), mode, fmt.Sprintf("must be %q (thinking with budget_tokens) or %q (adaptive thinking)",
				ThinkingBudget, ThinkingAdaptive))
		}
	}
	for _, m := range []struct {
		key string
		m   map[string]string
	}{{keyDeployments, p.Deployments}, {keyModelMap, p.ModelMap}} {
		for _, k := range sortedKeys(m.m) {
			if strings.TrimSpace(m.m[k]) == "" {
				add(joinPath(m.key, k), m.m[k], "must name a model (or deployment), not be empty")
			}
		}
	}
}

// checkKey reports a provider whose APIKeyEnv names a variable that the environment the
// configuration was loaded with does not set: without it every call would fail.
func checkKey(ps *problems, p Provider) {
	if p.APIKeyEnv == "" || !validEnvName(p.APIKeyEnv) {
		return
	}
	if _, err := p.APIKey(); err != nil {
		ps.add(Problem{Path: joinPath(keyLLM+"."+keyProviders, p.Name) + "." + keyAPIKeyEnv, Value: p.APIKeyEnv,
			Allowed: "names an environment variable that is not set (or is empty): set it to the API key"})
	}
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkBaseURL reports a BaseURL that is missing where required, is not an http(s) URL or
// carries a credential (userinfo, or a key in its query). The URL is never repeated: it may
// hold the very secret that makes it unusable.
func checkBaseURL(add func(key string, value any, allowed string), typ, raw string) {
	if raw == "" {
		if dialect.NeedsBaseURL(typ) {
			add(keyBaseURL, nil, fmt.Sprintf("is required for Dialect %q", typ))
		}
		return
	}
	if problem := redact.CheckBaseURL(raw); problem != "" {
		add(keyBaseURL, nil, problem)
	}
}

// checkOptions reports what Options.Validate finds, under path. A problem the parent policy
// already has (same field, same value: inherited, not set here) is reported once, at the
// parent. It returns the problems found, for the children of this policy.
func checkOptions(ps *problems, path string, o resilience.Options, parent map[string]bool) map[string]bool {
	err := o.Validate()
	if err == nil {
		return nil
	}
	var ve *resilience.ValidationError
	if !errors.As(err, &ve) {
		ps.add(Problem{Path: path, Allowed: err.Error(), Err: err})
		return nil
	}
	faults := map[string]bool{}
	for _, fe := range ve.Problems {
		id := fmt.Sprintf("%s=%v", fe.Field, fe.Value)
		faults[id] = true
		if parent[id] {
			continue
		}
		value := fe.Value
		if s, ok := value.(string); ok { // Validate quotes strings; Problem.Error quotes them again
			if u, err := strconv.Unquote(s); err == nil {
				value = u
			}
		}
		ps.add(Problem{Path: path + "." + fe.Field, Value: value, Allowed: fe.Allowed})
	}
	return faults
}

// apply sets the fields a normalized (partial) resilience tree holds.
func apply(o *resilience.Options, tree any) {
	m, _ := tree.(map[string]any)
	for key, v := range m {
		if f, ok := lookupOption(key); ok {
			setOption(o, f, v)
		}
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func oneOf(list []string) string {
	quoted := make([]string, len(list))
	for i, s := range list {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "must be one of " + strings.Join(quoted, ", ")
}

// EncodingNone, as a provider's TokenEncoding (or one model's in TokenEncodings), has its
// prompts estimated and learnt from usage even where the model's name says which encoding it
// uses (client.TokenEncodingNone).
const EncodingNone = "none"

// checkEncoding says what is wrong with a TokenEncoding value, "" when nothing is: empty (the
// model table's), "none", or an encoding registered with package tokens.
func checkEncoding(name string) string {
	if name == "" || name == EncodingNone {
		return ""
	}
	if _, ok := tokens.Lookup(name); ok {
		return ""
	}
	return fmt.Sprintf("must be %q (estimate, learning from usage) or a registered encoding (%s and %s are registered by "+
		"importing github.com/steadyllm/steady/tokens/tiktoken into the program)", EncodingNone, tokens.O200kBase, tokens.Cl100kBase)
}
