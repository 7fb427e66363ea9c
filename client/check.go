package client

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/headers"
	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// MaxRequestIDBytes bounds a call's own ID (WithRequestID): it travels as a header on every
// attempt and is repeated in errors and logs.
const MaxRequestIDBytes = 512

// maxShownID bounds a request ID where an error prints it.
const maxShownID = 128

// checkOptions checks what the options of a call ask for against the client, before anything
// is sent: every mistake in them is the caller's, a bad_request, and never reaches a provider
// (where Go's transport would refuse a header with a newline, a failure that would count
// against the provider's circuit and walk the whole fallback chain). It also resolves the
// names the options give — providers, policies, targets of extra fields — to the client's own
// spelling, matched case-insensitively as the configuration matches them.
func (c *Client) checkOptions(o *callOptions) error {
	if o.hasTO && o.timeout <= 0 {
		return badCall("WithTimeout(%s): must be above 0; a call may shorten or lengthen its time limit, never turn it off", o.timeout)
	}
	if o.callTimeout != nil && (*o.callTimeout <= 0 || *o.callTimeout > MaxCallTimeout) {
		return badCall("WithCallTimeout(%s): must be above 0 and at most %s; a call may shorten or lengthen its deadline, never turn it off",
			*o.callTimeout, MaxCallTimeout)
	}
	if o.firstToken != nil && *o.firstToken <= 0 {
		return badCall("WithFirstTokenTimeout(%s): must be above 0; a call never turns the policy's limit off", *o.firstToken)
	}
	if h := o.hedge; h != nil && h.After != 0 {
		if h.After < 0 || h.After > 600*time.Second {
			return badCall("WithHedge(%s, %d): the delay must be above 0 and at most 10m0s", h.After, h.Max)
		}
		if h.Max < 1 || h.Max > 3 {
			return badCall("WithHedge(%s, %d): a call sends 1 to 3 hedges", h.After, h.Max)
		}
	}
	switch o.rescue {
	case "", resilience.RescueOff, resilience.RescueContinue, resilience.RescueContinueOrBuffer, resilience.RescueRestart, resilience.RescueBuffer:
	default:
		return badCall("WithRescue(\"%s\"): must be \"off\", \"continue\", \"continue-or-buffer\", \"restart\" or \"buffer\"", redact.Safe(o.rescue, 64))
	}
	if err := checkPriority(o); err != nil {
		return err
	}
	if o.deferred && o.attempt < 1 {
		return badCall("Deferred(%d): the job's attempt number starts at 1", o.attempt)
	}
	for k, vs := range o.header {
		if headers.TransportOwned(http.CanonicalHeaderKey(k)) {
			return badCall("WithHeader(\"%s\", …): the transport sets this header for the connection, not the caller",
				redact.Safe(k, 64))
		}
		if !headers.ValidName(k) {
			return badCall("WithHeader(\"%s\", …): the name is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)",
				redact.Safe(k, 64))
		}
		for _, v := range vs {
			if i := headers.BadValueByte(v); i >= 0 {
				return badCall("WithHeader(\"%s\", …): the value holds a control character at byte %d (CR, LF, NUL…), which HTTP cannot carry",
					redact.Safe(k, 64), i)
			}
		}
	}
	if id := o.requestID; id != "" {
		if i := headers.BadValueByte(id); i >= 0 {
			return badCall("WithRequestID(\"%s\"): holds a control character at byte %d (CR, LF, NUL…), which HTTP cannot carry",
				redact.Safe(id, maxShownID), i)
		}
		if len(id) > MaxRequestIDBytes {
			return badCall("WithRequestID(\"%s\"): %d bytes, at most %d", redact.Safe(id, maxShownID), len(id), MaxRequestIDBytes)
		}
	}
	if len(o.fields) > 0 {
		fields := make(map[string]map[string]any, len(o.fields))
		for target, fs := range o.fields {
			name, ok := c.fieldTarget(target)
			if !ok {
				return badCall("WithExtraFields(\"%s\", …): names no provider of the client (%s) and no GenAI system (%s, %s, %s)",
					redact.Safe(target, 64), strings.Join(c.order, ", "),
					providers.SystemOpenAI, providers.SystemAzureOpenAI, providers.SystemAnthropic)
			}
			for _, e := range c.entriesFor(name) {
				for f := range fs {
					if slices.Contains(e.shape, f) {
						return badCall("WithExtraFields(\"%s\", …): \"%s\" is set by the %s provider itself to decide the kind of call (%s): extra fields cannot change it",
							redact.Safe(target, 64), redact.Safe(f, 64), e.name, strings.Join(e.shape, ", "))
					}
				}
			}
			m := fields[name]
			if m == nil {
				m = make(map[string]any, len(fs))
				fields[name] = m
			}
			for k, v := range fs {
				m[k] = v
			}
		}
		o.fields = fields
	}
	return nil
}

// fieldTarget resolves the target of WithExtraFields: a provider of the client (its own
// spelling), or a GenAI system (lower case).
func (c *Client) fieldTarget(target string) (string, bool) {
	if e := c.lookup(target); e != nil {
		return e.name, true
	}
	for _, s := range []string{providers.SystemOpenAI, providers.SystemAzureOpenAI, providers.SystemAnthropic} {
		if strings.EqualFold(s, target) {
			return s, true
		}
	}
	for _, name := range c.order {
		if s := c.entries[name].system; s != "" && strings.EqualFold(s, target) {
			return s, true
		}
	}
	return "", false
}

// entriesFor returns the providers a target of WithExtraFields reaches: the provider it names,
// or every provider of the GenAI system it names.
func (c *Client) entriesFor(target string) []*entry {
	if e := c.entries[target]; e != nil {
		return []*entry{e}
	}
	var out []*entry
	for _, name := range c.order {
		if e := c.entries[name]; e.system == target {
			out = append(out, e)
		}
	}
	return out
}

// lookup returns the provider named name, matched as the configuration matches names:
// exactly, else case-insensitively; nil when the client has none.
func (c *Client) lookup(name string) *entry {
	if e := c.entries[name]; e != nil {
		return e
	}
	for _, n := range c.order {
		if strings.EqualFold(n, name) {
			return c.entries[n]
		}
	}
	return nil
}

// badCall is a bad_request about a call's options.
func badCall(format string, args ...any) *providers.Error {
	return &providers.Error{Kind: providers.KindBadRequest, Message: fmt.Sprintf(format, args...)}
}
