package config

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// The schema: which keys exist under LLM, and what each leaf accepts. Leaf values are
// normalized per source (file or environment) to one Go type per kind before they reach koanf,
// so the merged tree decodes without surprises.

// Canonical key names.
const (
	keyLLM        = "LLM"
	keyResilience = "Resilience"
	keyPolicies   = "Policies"
	keyProviders  = "Providers"
	keyFallback   = "Fallback"
	keyFailover   = "FailoverAfterSeconds"
	keyFallbackOn = "FallbackOn"
	keyVerify     = "VerifyAtStart"

	keyDialect          = "Dialect"
	keyTypeAlias        = "Type" // the former spelling of Dialect, still accepted
	keyBaseURL          = "BaseURL"
	keyAPIKeyEnv        = "APIKeyEnv"
	keyModel            = "Model"
	keyAPIVersion       = "APIVersion"
	keyPolicy           = "Policy"
	keyOrganization     = "Organization"
	keyDeployments      = "Deployments"
	keyOmitStreamUsage  = "OmitStreamUsage"
	keyVersion          = "Version"
	keyDefaultMaxTokens = "DefaultMaxTokens"
	keyBeta             = "Beta"
	keyCapabilities     = "Capabilities"
	keyDeploymentOf     = "DeploymentOf"
	keyWeight           = "Weight"
	keyRPM              = "RequestsPerMinute"
	keyTPM              = "TokensPerMinute"
	keyRouting          = "Routing"
	keySharedState      = "SharedState"
	keyLimits           = "Limits"
	keyModelMap         = "ModelMap"
	keyContextWindow    = "ContextWindow"
	keyContextWindows   = "ContextWindows"
	keyActiveProbe      = "ActiveProbe"
	keyAPI              = "API"
	keyThinkingModes    = "ThinkingModes"
	keyCountTokens      = "CountTokens"
	keyCountTimeout     = "CountTimeoutSeconds"
	keyTokenEncoding    = "TokenEncoding"
	keyTokenEncodings   = "TokenEncodings"
	keyPrefill          = "Prefill"
	keyContinuation     = "Continuation"
	keyContinuations    = "Continuations"

	keyMaxResponseBytes  = "MaxResponseBytes"
	keyMaxEventBytes     = "MaxEventBytes"
	keyMaxErrorBodyBytes = "MaxErrorBodyBytes"
)

var (
	llmKeys      = []string{keyResilience, keyPolicies, keyProviders, keyFallback, keyFallbackOn, keyFailover, keyRouting, keySharedState, keyCost, keyVerify}
	providerKeys = []string{keyDialect, keyBaseURL, keyAPIKeyEnv, keyModel, keyAPIVersion, keyPolicy, keyResilience,
		keyOrganization, keyDeployments, keyOmitStreamUsage, keyVersion, keyDefaultMaxTokens, keyBeta, keyLimits, keyModelMap, keyCapabilities,
		keyDeploymentOf, keyWeight, keyRPM, keyTPM, keyContextWindow, keyContextWindows, keyActiveProbe, keyAPI, keyThinkingModes,
		keyCountTokens, keyCountTimeout, keyTokenEncoding, keyTokenEncodings,
		keyPrefill, keyContinuation, keyContinuations}
	limitKeys = []string{keyMaxResponseBytes, keyMaxEventBytes, keyMaxErrorBodyBytes}
)

// providerField says what a field of a provider accepts and which provider types use it.
type providerField struct {
	kind  kind
	types []string // nil: every type
}

// providerFields describes every field of LLM.Providers.<name> but Resilience.
var providerFields = map[string]providerField{
	keyDialect:          {kind: kindString},
	keyBaseURL:          {kind: kindString},
	keyAPIKeyEnv:        {kind: kindString},
	keyModel:            {kind: kindString},
	keyPolicy:           {kind: kindString},
	keyAPIVersion:       {kind: kindString, types: []string{DialectAzure}},
	keyOrganization:     {kind: kindString, types: []string{DialectOpenAI, DialectOpenAICompatible}},
	keyDeployments:      {kind: kindStringMap, types: []string{DialectAzure}},
	keyOmitStreamUsage:  {kind: kindBool, types: []string{DialectOpenAI, DialectAzure, DialectOpenAICompatible}},
	keyVersion:          {kind: kindString, types: []string{DialectAnthropic}},
	keyDefaultMaxTokens: {kind: kindInt, types: []string{DialectAnthropic}},
	keyBeta:             {kind: kindStringList, types: []string{DialectAnthropic}},
	keyLimits:           {kind: kindLimits},
	keyModelMap:         {kind: kindStringMap},
	keyCapabilities:     {kind: kindStringList},
	keyDeploymentOf:     {kind: kindString},
	keyWeight:           {kind: kindInt},
	keyRPM:              {kind: kindInt},
	keyTPM:              {kind: kindInt},
	keyContextWindow:    {kind: kindInt},
	keyContextWindows:   {kind: kindIntMap},
	keyActiveProbe:      {kind: kindString},
	keyAPI:              {kind: kindString, types: []string{DialectOpenAI, DialectAzure, DialectOpenAICompatible}},
	keyThinkingModes:    {kind: kindStringMap, types: []string{DialectAnthropic}},
	keyCountTokens:      {kind: kindBool, types: []string{DialectAnthropic}},
	keyCountTimeout:     {kind: kindSeconds, types: []string{DialectAnthropic}},
	keyTokenEncoding:    {kind: kindString},
	keyTokenEncodings:   {kind: kindStringMap},
	keyPrefill:          {kind: kindString, types: []string{DialectOpenAICompatible}},
	keyContinuation:     {kind: kindString},
	keyContinuations:    {kind: kindStringMap},
}

// sharedStateFields describes every field of LLM.SharedState.
var sharedStateFields = map[string]kind{
	"Driver":              kindString,
	"Address":             kindString,
	"Prefix":              kindString,
	"DB":                  kindInt,
	"UsernameEnv":         kindString,
	"PasswordEnv":         kindString,
	"TLS":                 kindBool,
	"PollIntervalSeconds": kindSeconds,
	"TimeoutSeconds":      kindSeconds,
	"FailClosed":          kindBool,
}

var sharedStateKeys = sortedKeys(sharedStateFields)

// routingStrategies are the values of LLM.Routing (client.Strategies).
var routingStrategies = []string{"priority", "weighted", "round_robin", "least_in_flight", "most_headroom", "latency"}

// kind is what a leaf accepts. Normalized values: kindString → string, kindBool → bool,
// kindInt → int, kindNumber and kindSeconds → float64, kindIntList → []int,
// kindStringList → []string, kindStringMap → map[string]string and kindIntMap →
// map[string]int (keys as written: model names are case-sensitive); kindLimits is an object of
// whole numbers (map[string]any with the canonical keys of limitKeys); kindFallbackOn is an
// object of error kinds to lists of strings (map[string]any of []string, see fallbackon.go).
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindNumber
	kindSeconds // a number of seconds, or a Go duration string such as "750ms"
	kindIntList
	kindStringList
	kindStringMap
	kindLimits
	kindIntMap
	kindFallbackOn
)

// allowed describes the values a kind accepts, for messages.
func (k kind) allowed() string {
	switch k {
	case kindBool:
		return "must be true or false"
	case kindInt:
		return "must be a whole number"
	case kindNumber:
		return "must be a finite number"
	case kindSeconds:
		return `must be a finite number of seconds (0.75) or a Go duration string ("750ms")`
	case kindIntList:
		return "must be a list of whole numbers"
	case kindStringList:
		return "must be a list of strings"
	case kindStringMap:
		return `must be an object of strings, such as {"gpt-4o": "my-deployment"}`
	case kindIntMap:
		return `must be an object of whole numbers, such as {"gpt-4o": 128000}`
	case kindFallbackOn:
		return `must be an object of lists of provider names by error kind, such as {"context_too_long": ["large"]}`
	case kindLimits:
		return "must be an object of byte counts: " + strings.Join(limitKeys, ", ")
	}
	return "must be a string"
}

// elem is the kind of one element of a list kind, or of one value of a map kind.
func (k kind) elem() kind {
	if k == kindIntList || k == kindIntMap {
		return kindInt
	}
	return kindString
}

func (k kind) isList() bool { return k == kindIntList || k == kindStringList }

// isMap reports whether k is an object of user-chosen keys (model names) to values of k.elem().
func (k kind) isMap() bool { return k == kindStringMap || k == kindIntMap }

// optionField is one field of resilience.Options.
type optionField struct {
	name  string // the JSON key
	index int    // the struct field index
	kind  kind
}

// optionFields lists the fields of resilience.Options in declaration order. It is derived from
// the struct so that a field added there is configurable here without a change. It is never
// modified after package initialization.
var optionFields, optionNames = describeOptions()

func describeOptions() ([]optionField, []string) {
	t := reflect.TypeFor[resilience.Options]()
	var fields []optionField
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var k kind
		switch f.Type.Kind() {
		case reflect.String:
			k = kindString
		case reflect.Bool:
			k = kindBool
		case reflect.Int, reflect.Int64, reflect.Int32:
			k = kindInt
		case reflect.Float64:
			k = kindNumber
			if strings.HasSuffix(name, "Seconds") {
				k = kindSeconds
			}
		case reflect.Slice:
			if f.Type.Elem().Kind() != reflect.Int {
				continue // not configurable; TestOptionFields_CoverEveryField catches it
			}
			k = kindIntList
		default:
			continue
		}
		fields = append(fields, optionField{name: name, index: i, kind: k})
		names = append(names, name)
	}
	return fields, names
}

// optionField returns the field whose JSON name matches key case-insensitively.
func lookupOption(key string) (optionField, bool) {
	for _, f := range optionFields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return optionField{}, false
}

// canonical returns the name in names that matches key case-insensitively.
func canonical(key string, names []string) (string, bool) {
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n, true
		}
	}
	return "", false
}

// isSecretKey reports whether a key under a provider looks like an API key or other credential
// written literally into the configuration ("APIKey", "api_key", "Key", "token", …).
func isSecretKey(key string) bool {
	k := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(key))
	switch k {
	case "apikey", "key", "secret", "secretkey", "token", "accesstoken", "authtoken", "bearertoken",
		"password", "authorization", "credentials", "azureapikey", "openaiapikey", "anthropicapikey":
		return true
	}
	return false
}

// fromJSON converts a decoded JSON value to the normalized value of kind k. ok is false when
// the value has the wrong type; the caller reports it.
func fromJSON(k kind, v any) (any, bool) {
	switch k {
	case kindString:
		s, ok := v.(string)
		return s, ok
	case kindBool:
		b, ok := v.(bool)
		return b, ok
	case kindInt:
		f, ok := v.(float64)
		if !ok {
			return nil, false
		}
		return wholeNumber(f)
	case kindNumber:
		f, ok := v.(float64)
		return f, ok && finite(f)
	case kindSeconds:
		switch v := v.(type) {
		case float64:
			return v, finite(v)
		case string:
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return nil, false
			}
			return d.Seconds(), true
		}
		return nil, false
	}
	return nil, false // lists are handled element by element
}

// fromEnv converts an environment variable's text to the normalized value of kind k.
// strconv.ParseFloat reads "NaN", "Inf" and "infinity" (in any case, with a sign): they are
// refused here, once for every number, because a NaN compares false with every bound and so
// would pass any range check written as "v < lo || v > hi".
func fromEnv(k kind, s string) (any, bool) {
	t := strings.TrimSpace(s)
	switch k {
	case kindString:
		return s, true
	case kindBool:
		b, err := strconv.ParseBool(t)
		return b, err == nil
	case kindInt:
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, false
		}
		return wholeNumber(float64(n))
	case kindNumber:
		f, err := strconv.ParseFloat(t, 64)
		return f, err == nil && finite(f)
	case kindSeconds:
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return f, finite(f)
		}
		d, err := time.ParseDuration(t) // refuses what overflows a Duration ("9999999999h")
		if err != nil {
			return nil, false
		}
		return d.Seconds(), true
	}
	return nil, false
}

// finite reports whether f is neither NaN nor an infinity. JSON cannot spell either, but the
// file and environment readers share the rule so that no source can bring one in.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// maxWhole bounds whole numbers: every int field's allowed range is far inside it, and a
// float64 holds every integer up to it exactly.
const maxWhole = 1 << 53

func wholeNumber(f float64) (any, bool) {
	if f != math.Trunc(f) || math.Abs(f) > maxWhole {
		return nil, false
	}
	return int(f), true
}

// setOption sets field f of o from a normalized value. Lists are copied, so o never shares
// memory with the tree it came from.
func setOption(o *resilience.Options, f optionField, v any) {
	fv := reflect.ValueOf(o).Elem().Field(f.index)
	switch v := v.(type) {
	case int:
		fv.SetInt(int64(v))
	case float64:
		fv.SetFloat(v)
	case string:
		fv.SetString(v)
	case bool:
		fv.SetBool(v)
	case []int:
		fv.Set(reflect.ValueOf(append([]int{}, v...)))
	}
}

// optionsTree renders o as a normalized tree, for loading the defaults into koanf.
func optionsTree(o resilience.Options) map[string]any {
	tree := make(map[string]any, len(optionFields))
	rv := reflect.ValueOf(o)
	for _, f := range optionFields {
		fv := rv.Field(f.index)
		switch f.kind {
		case kindString:
			tree[f.name] = fv.String()
		case kindBool:
			tree[f.name] = fv.Bool()
		case kindInt:
			tree[f.name] = int(fv.Int())
		case kindNumber, kindSeconds:
			tree[f.name] = fv.Float()
		case kindIntList:
			tree[f.name] = append([]int{}, fv.Interface().([]int)...)
		}
	}
	return tree
}

// cloneOptions returns a copy of o that shares no memory with it.
func cloneOptions(o resilience.Options) resilience.Options {
	if o.RetryableStatusCodes != nil {
		o.RetryableStatusCodes = append([]int{}, o.RetryableStatusCodes...)
	}
	return o
}
