package config

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"

	"github.com/steadyllm/steady/resilience"
)

// Config is the LLM section of an application's settings, resolved and validated: every
// resilience.Options in it passes Validate, every name it refers to exists.
type Config struct {
	// Resilience is LLM.Resilience over resilience.DefaultOptions(): the policy of providers
	// that name no policy and override nothing.
	Resilience resilience.Options
	// Policies are the named policies of LLM.Policies, each resolved over Resilience: a key a
	// policy leaves out has the value of LLM.Resilience (which defaults to DefaultOptions).
	// Keys are the names as first declared. Never nil after a successful load.
	Policies map[string]resilience.Options
	// Providers are the providers of LLM.Providers by name, as first declared. Never nil
	// after a successful load.
	Providers map[string]Provider
	// Fallback is LLM.Fallback: provider names in the order to try them, each a key of
	// Providers. Nil when not configured.
	Fallback []string
	// FallbackOn is LLM.FallbackOn: for an error kind (providers.ErrorKind, in its canonical
	// spelling, such as "context_too_long"), the providers a call that fails with that kind
	// goes to, in order and skipping those it has tried, instead of what is left of Fallback
	// (client.WithFallbackOn). Each name is a key of Providers that is not a deployment, or a
	// provider made of deployments (Groups), spelled as declared. An empty list stops the chain
	// on that kind, even one that would fall back. Any kind of providers.Kinds may be named but
	// canceled: the caller's own cancellation always ends the call. Nil when not configured.
	FallbackOn map[string][]string
	// FailoverAfterSeconds is LLM.FailoverAfterSeconds: how long a call waits on a provider
	// (a rate-limit pause, a server's hint, a backoff) when another provider of the chain can
	// serve it at once (client.WithFailoverAfter); nil when not configured (the client's
	// default). Allowed: 0..3600.
	FailoverAfterSeconds *float64
	// VerifyAtStart is LLM.VerifyAtStart: steady.FromConfig checks every configured route with
	// one cheap request before it returns the client (client.Client.Verify), and fails, naming
	// the route and the provider's reason, when a route's configuration fails (a model the
	// server does not have, a refused key). Off by default: each check is a real call, billed
	// a few tokens.
	VerifyAtStart bool
	// Routing is LLM.Routing: for each provider made of deployments (providers whose
	// DeploymentOf names it), how calls are routed among them: "priority" (the default),
	// "weighted", "round_robin", "least_in_flight", "most_headroom" or "latency"
	// (client.Strategies).
	Routing map[string]string
	// SharedState is LLM.SharedState: the store through which the application's instances
	// share circuit state, rate-limit pauses and per-minute limits; nil when not configured
	// (each instance alone).
	SharedState *SharedState
	// Cost is LLM.Cost: the prices of calls and the budgets of their spend; nil when not
	// configured (calls are not priced).
	Cost *Cost
}

// SharedState is LLM.SharedState. steady.FromConfig opens it with the driver its Driver
// names, which the program links in with one import (for "redis":
// import _ "github.com/steadyllm/steady/state/redis").
type SharedState struct {
	// Driver is "redis" (the default).
	Driver string
	// Address is the store's host:port. Required.
	Address string
	// Prefix starts every key the store writes ("steady:" when empty): instances that share
	// a prefix share their state.
	Prefix string
	// DB selects the Redis database. Allowed: 0..1000.
	DB int
	// UsernameEnv and PasswordEnv name the environment variables that hold the credentials
	// (never the credentials themselves); each, when named, must be set. Problems with them
	// never show what is written there, which may be the credential put in the wrong place.
	UsernameEnv, PasswordEnv string
	// TLS connects over TLS, verified against the system's roots.
	TLS bool
	// PollIntervalSeconds is how often an instance reads the others' advice (0: 0.25).
	// Allowed: 0.01..60.
	PollIntervalSeconds float64
	// TimeoutSeconds bounds every command, and so the longest a call ever waits for the
	// store (0: 0.2). Allowed: 0.001..10.
	TimeoutSeconds float64
	// FailClosed refuses calls that need room in a shared budget while the store cannot be
	// reached, instead of letting each instance go on under its own budget (the default).
	FailClosed bool

	lookup func(name string) (string, bool)
}

// Credentials returns the username and password read from the variables UsernameEnv and
// PasswordEnv name, in the environment the configuration was loaded with.
func (s SharedState) Credentials() (username, password string) {
	lookup := s.lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if s.UsernameEnv != "" {
		username, _ = lookup(s.UsernameEnv)
	}
	if s.PasswordEnv != "" {
		password, _ = lookup(s.PasswordEnv)
	}
	return username, password
}

// Groups returns the providers made of deployments: each name that providers' DeploymentOf
// names, with the names of its deployments in sorted order.
func (c *Config) Groups() map[string][]string {
	out := map[string][]string{}
	for _, name := range sortedKeys(c.Providers) {
		if g := c.Providers[name].DeploymentOf; g != "" {
			out[g] = append(out[g], name)
		}
	}
	return out
}

// Load reads the configuration: the defaults, then each JSON file in order (a later file
// overrides an earlier one key by key; a list is replaced as a whole), then the process
// environment (see [LoadWithEnv]). With no path, only the defaults and the environment count.
//
// The LLM section must come from somewhere: at least one file must have a top-level LLM key
// (in any case, such as "llm") or at least one variable must start with LLM__. When none does,
// every file is reported ("no LLM section found", with a suggestion when a top-level key looks
// like a misspelling, such as "LMM", "LLMs" or "Llm_", or is a setting written outside the
// section, such as "Providers"); with no file, the load is reported as a whole. A file may
// leave the section to another file (an appsettings.Production.json that only sets logging),
// except that a top-level key spelt close to LLM whose object holds LLM settings ("LMM":
// {"Providers": …}) is an error in any case: its settings would be silently lost. Keys other
// than LLM are otherwise ignored: they belong to the rest of the application.
//
// A missing or unreadable file, invalid JSON, an unknown key, a value of the wrong type or out
// of range, and a reference to an unknown policy or provider are all errors; Load reports all
// of them at once in an *[Error] and then returns a nil *Config, never a partial one.
func Load(paths ...string) (*Config, error) {
	return LoadWithEnv(os.Environ(), paths...)
}

// LoadWithEnv is [Load] with the environment given as "NAME=value" strings (the format of
// os.Environ), so a test or a caller controls it. A nil environ means no variables.
//
// Variables follow the .NET convention: "__" separates the levels, LLM__Resilience__RetryCount
// sets LLM.Resilience.RetryCount, LLM__Providers__openai__BaseURL a provider's BaseURL,
// LLM__Fallback__0 the first element of a list. List elements merge by index into the list
// the files set at that same path (a list the files leave out starts empty there, rather than
// copying an inherited one), and an index past the end must not leave a gap; a variable cannot
// shorten a list. A map (Deployments, ModelMap, Routing, ContextWindows) is set entry by entry,
// the key as the last segment (LLM__Providers__azure__Deployments__gpt-4o=prod-gpt4o), or by a
// JSON object of its values in the map's own variable
// (LLM__Providers__azure__Deployments={"gpt-4o":"prod-gpt4o"}), which bash can export even
// when a key holds a hyphen or a dot; either way the entries merge into the files' map one by
// one, and an entry set both ways is an error. LLM.FallbackOn's lists are set by index
// (LLM__FallbackOn__context_too_long__0=large), or several at once by a JSON object in
// LLM__FallbackOn, each replacing the files' list for its kind, an empty one too
// (LLM__FallbackOn={"unavailable":[]}); a kind's list set both ways is an error. Names are
// matched to the known keys, and to the policy and provider names the files declare,
// case-insensitively; a variable may also declare a new policy or provider.
// Variables starting with LLM__ that match no setting are errors; so are variables whose
// prefix is a near miss of LLM__ and whose next segment names a setting of the section
// (LMM__Providers__openai__Model); others are ignored.
func LoadWithEnv(environ []string, paths ...string) (*Config, error) {
	l := newLoader(environ)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			l.unreadable(path, err)
			continue
		}
		l.loadJSON(path, data)
	}
	l.loadEnv(environ)
	return l.finish()
}

// Parse reads the configuration from JSON already in memory (an embedded file, a secret
// store's document) as [Load] reads a file: over the defaults, then the process environment —
// its LLM__ variables override the document, and every APIKeyEnv, UsernameEnv and PasswordEnv
// must name a variable it sets. Parse(data) is ParseWithEnv(data, os.Environ()), as Load is
// LoadWithEnv(os.Environ(), …): the functions without WithEnv read the process's environment,
// those with it only the one they are given.
//
// Errors are as for [Load]; problems of the document name the source "input". The document
// must hold the LLM section, as a file must: Parse of {} or of null is an error ("no LLM
// section found") unless an LLM__ variable is set, while {"LLM": {}} gives the defaults with no
// provider.
func Parse(data []byte) (*Config, error) {
	return ParseWithEnv(data, os.Environ())
}

// ParseWithEnv is [Parse] with the environment given as "NAME=value" strings, as for
// [LoadWithEnv]: its LLM__ variables override the document, and it is where the variables
// APIKeyEnv names are looked up, at the load and later by [Provider.APIKey]. A nil environ
// means no variables, so the result depends on data alone — and a provider that names an
// APIKeyEnv is an error, since no variable is set. An LLM__ variable is enough of an LLM
// section: ParseWithEnv of {} with LLM__Resilience__RetryCount=5 set loads.
func ParseWithEnv(data []byte, environ []string) (*Config, error) {
	l := newLoader(environ)
	l.loadJSON("input", data)
	l.loadEnv(environ)
	return l.finish()
}

// lookupIn returns a lookup in environ ("NAME=value" strings; the first of a name wins, as
// with os.Getenv). The map it closes over is never printed: a Provider holds only the func.
func lookupIn(environ []string) func(string) (string, bool) {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, seen := vars[k]; !seen {
				vars[k] = v
			}
		}
	}
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// delim separates the levels of koanf keys. It is a control character because policy and
// provider names (say "gpt-4.1") may contain dots, colons or underscores, and koanf splits keys
// on its delimiter; checkName refuses names with control characters, so no name is ever split.
const delim = "\x1f"

// loader merges the sources in koanf: the defaults from a confmap, each file through rawbytes
// and a schema-checking JSON parser, the environment through koanf's env provider with a
// schema-aware key mapping.
type loader struct {
	k      *koanf.Koanf
	ps     problems
	names  names
	env    func(string) (string, bool) // the environment given, for the API keys
	broken bool                        // a source could not be read or decoded: skip the checks of the merged result

	sections  []*sectionFinding // one per JSON source decoded, in load order
	envHasLLM bool              // a variable starts with LLM__
	// origins maps the JSON path of each setting a variable set to that variable (see
	// envReader.origins).
	origins map[string]string
}

func newLoader(environ []string) *loader {
	l := &loader{k: koanf.New(delim), env: lookupIn(environ)}
	defaults := map[string]any{keyLLM: map[string]any{keyResilience: optionsTree(resilience.DefaultOptions())}}
	l.mustLoad("defaults", confmap.Provider(defaults, ""), nil)
	return l
}

// mustLoad loads into koanf. None of the providers and parsers used here can fail (the JSON
// parser turns its errors into problems), so an error is a bug, reported rather than lost.
func (l *loader) mustLoad(src string, p koanf.Provider, pa koanf.Parser) {
	if err := l.k.Load(p, pa); err != nil {
		l.ps.add(Problem{Source: src, Allowed: "internal error: " + err.Error(), Err: err})
		l.broken = true
	}
}

func (l *loader) unreadable(path string, err error) {
	msg := "cannot read the file: " + err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		msg = "file not found"
	}
	l.ps.add(Problem{Source: path, Allowed: msg, Err: err})
	l.broken = true
}

func (l *loader) loadJSON(src string, data []byte) {
	f := &sectionFinding{src: src}
	l.sections = append(l.sections, f)
	l.mustLoad(src, rawbytes.Provider(data), &jsonParser{src: src, ps: &l.ps, names: &l.names, broken: &l.broken, section: f})
}

func (l *loader) loadEnv(environ []string) {
	r := newEnvReader(&l.ps, &l.names, l.k.Raw())
	l.origins = r.origins
	sorted := slices.Clone(environ)
	slices.Sort(sorted) // so that problems, and the spelling of new names, do not depend on order
	l.scanEnvPrefixes(sorted)
	l.mustLoad("environment", env.Provider(delim, env.Opt{
		TransformFunc: r.transform,
		EnvironFunc:   func() []string { return sorted },
	}), nil)
	if lists := r.finishLists(); len(lists) > 0 {
		l.mustLoad("environment", confmap.Provider(lists, delim), nil)
	}
}

// finish checks the merged tree and builds the Config, or returns every problem found.
func (l *loader) finish() (*Config, error) {
	if l.broken {
		return nil, l.ps.err()
	}
	l.checkSections()
	llm, _ := l.k.Raw()[keyLLM].(map[string]any)
	cfg := build(llm, &l.ps, l.env)
	l.attribute()
	if err := l.ps.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// attribute names, as its source, the variable that set the value of each problem the checks
// of the merged result found: a user who wrote LLM__Resilience__RetryCount=-5 reads
// "LLM__Resilience__RetryCount: LLM.Resilience.RetryCount = -5: must be between 0 and 20",
// not a JSON path they never wrote. A problem at an element of a list that a variable set
// whole (LLM__FallbackOn={"refused": [...]}) names that variable too. A value from a file is
// found by its path, which is what the file holds.
func (l *loader) attribute() {
	if len(l.origins) == 0 {
		return
	}
	for i := range l.ps.list {
		p := &l.ps.list[i]
		if p.Source != "" || p.Path == "" {
			continue
		}
		name, ok := l.origins[p.Path]
		if !ok && strings.HasSuffix(p.Path, "]") {
			if cut := strings.LastIndexByte(p.Path, '['); cut > 0 {
				name, ok = l.origins[p.Path[:cut]]
			}
		}
		if ok {
			p.Source = name
		}
	}
}
