package mocks

import (
	"crypto/sha256"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimits are the limits the fake enforces for one API key, as the real APIs do per
// organisation or key: requests and tokens per minute. A request costs its prompt tokens plus
// its max_tokens (or, when it sets none, the length of the answer it would get), debited
// when it arrives. Each budget refills continuously, its whole limit per Minute. A request
// that does not fit is answered 429 with retry-after (and retry-after-ms) saying when it
// would, and every answer carries the real x-ratelimit-* / anthropic-ratelimit-* headers of
// the key's budgets. A zero limit is no limit.
//
// The server tracks the budgets of at most 10 000 keys at once. Past that it forgets the keys
// whose budgets have refilled, then, if that is not enough, arbitrary keys until half the
// room is free; a forgotten key starts again with full budgets. Only a client using thousands
// of keys within one minute can tell.
type RateLimits struct {
	RequestsPerMinute int `json:"requestsPerMinute,omitempty"`
	TokensPerMinute   int `json:"tokensPerMinute,omitempty"`
	// Minute is the fake's minute: shorten it (one second, say) so that a test of pacing takes
	// seconds. Zero means a real minute.
	Minute time.Duration `json:"-"`
	// MinuteMs is Minute in milliseconds, for scenario files.
	MinuteMs int `json:"minuteMs,omitempty"`
}

func (l RateLimits) minute() time.Duration {
	switch {
	case l.Minute > 0:
		return l.Minute
	case l.MinuteMs > 0:
		return time.Duration(l.MinuteMs) * time.Millisecond
	}
	return time.Minute
}

func (l RateLimits) zero() bool { return l.RequestsPerMinute <= 0 && l.TokensPerMinute <= 0 }

// WithRateLimits enforces l for every API key (see RateLimits). Requests without a key share
// one budget.
func WithRateLimits(l RateLimits) Option { return func(o *options) { o.limits = &l } }

// WithClock gives the server another clock than time.Now for its rate limits (WithRateLimits)
// and its outages (WithOutage, counted from the clock's reading when NewServer runs), so a test
// can move time instead of waiting for budgets to refill or outages to end. Delays, stalls and
// slow streams wait on the server's timers instead: the wall clock's unless [WithAfterFunc]
// gives the same clock's.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithKeyRateLimits enforces l for the API key key, instead of the limits of WithRateLimits.
func WithKeyRateLimits(key string, l RateLimits) Option {
	return func(o *options) {
		if o.keyLimits == nil {
			o.keyLimits = map[string]RateLimits{}
		}
		o.keyLimits[key] = l
	}
}

// bucket is one budget: level units of limit, refilled at limit per minute.
type bucket struct {
	limit int
	level float64
	last  time.Time
}

func (b *bucket) refill(now time.Time, minute time.Duration) {
	if b.last.IsZero() {
		b.level, b.last = float64(b.limit), now
		return
	}
	if now.Before(b.last) {
		// A request that read the clock before another took the bucket first: no time
		// passed for the bucket, which neither drains nor refills the same moment twice.
		return
	}
	b.level = math.Min(float64(b.limit), b.level+float64(b.limit)*float64(now.Sub(b.last))/float64(minute))
	b.last = now
}

// wait is how long until the bucket holds n, 0 when it does.
func (b *bucket) wait(n float64, minute time.Duration) time.Duration {
	if b.limit <= 0 || b.level >= n {
		return 0
	}
	return time.Duration((n - b.level) / float64(b.limit) * float64(minute))
}

// reset is how long until the bucket is full again.
func (b *bucket) reset(minute time.Duration) time.Duration { return b.wait(float64(b.limit), minute) }

// maxTrackedKeys is how many keys' budgets the limiter holds. Every distinct key a client
// sends gets a budget, so without a bound a client inventing keys would grow the map for
// ever; see limiter.makeRoom for what is forgotten first.
const maxTrackedKeys = 10000

// limitSet is the rate limits in force: every key's, each route's and particular keys'. A
// published set is never modified (see limiter.change): a request reads the set of its
// arrival without a lock.
type limitSet struct {
	def    *RateLimits           // every key's; nil: none
	routes map[string]RateLimits // by route (see Routes)
	keys   map[string]RateLimits // by API key
}

// pick returns the limits of a request made with key on route, and the scope of its budget:
// the key's own limits (one budget per key, whatever the route), else its route's (one budget
// per key on that route), else every key's (one budget per key).
func (ls *limitSet) pick(route, key string) (RateLimits, string, bool) {
	if l, ok := ls.keys[key]; ok {
		return l, "key", true
	}
	if l, ok := ls.routes[route]; ok {
		return l, "route " + route, true
	}
	if ls.def != nil {
		return *ls.def, "", true
	}
	return RateLimits{}, "", false
}

// limiter holds the budgets of every key, by the SHA-256 of the key and the scope of its
// limits (a key is a header value, up to 1 MiB: the map should not keep that). Its limits can
// change while the server runs: a budget made under other limits than those now in force
// starts again, full, under the new ones.
type limiter struct {
	set atomic.Pointer[limitSet]
	mu  sync.Mutex
	by  map[[sha256.Size]byte]*keyBudget
}

func newLimiter(def *RateLimits, routes, keys map[string]RateLimits) *limiter {
	l := &limiter{by: map[[sha256.Size]byte]*keyBudget{}}
	ls := &limitSet{routes: maps.Clone(routes), keys: maps.Clone(keys)}
	if def != nil {
		d := *def
		ls.def = &d
	}
	l.set.Store(ls)
	return l
}

// change publishes a changed copy of the limits in force; mu serialises the changes.
func (l *limiter) change(f func(ls *limitSet)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.set.Load()
	ls := &limitSet{def: old.def, routes: maps.Clone(old.routes), keys: maps.Clone(old.keys)}
	if ls.routes == nil {
		ls.routes = map[string]RateLimits{}
	}
	if ls.keys == nil {
		ls.keys = map[string]RateLimits{}
	}
	f(ls)
	l.set.Store(ls)
}

// forget drops the budgets whose scope is scope ("" every budget), so that they start again
// full.
func (l *limiter) forget(all bool, scope string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if all {
		clear(l.by)
		return
	}
	for k, b := range l.by {
		if b.scope == scope {
			delete(l.by, k)
		}
	}
}

// keyBudget is what one key has left under the limits of one scope.
type keyBudget struct {
	limits   RateLimits
	scope    string
	requests bucket
	tokens   bucket
}

// makeRoom runs when the limiter holds maxTrackedKeys budgets and a new key arrives; l.mu must
// be held. It forgets the budgets that have refilled (a full budget is what a new key gets,
// so forgetting it changes nothing), and if more than half remain, arbitrary ones until half
// remain: those keys start again with full budgets, which only a client juggling thousands of
// keys within one minute can notice. Leaving half the room free makes the sweep cost O(1)
// per key, amortised.
func (l *limiter) makeRoom(now time.Time) {
	for k, b := range l.by {
		m := b.limits.minute()
		b.requests.refill(now, m)
		b.tokens.refill(now, m)
		if b.requests.level >= float64(b.requests.limit) && b.tokens.level >= float64(b.tokens.limit) {
			delete(l.by, k)
		}
	}
	for k := range l.by {
		if len(l.by) <= maxTrackedKeys/2 {
			break
		}
		delete(l.by, k)
	}
}

// budgetState is a key's budgets after a request: what the headers say.
type budgetState struct {
	limited                      bool
	retryAfter                   time.Duration
	reqLimit, reqLeft            int
	tokLimit, tokLeft            int
	reqReset, tokReset           time.Duration
	enforcesReqs, enforcesTokens bool
}

// admit debits a request of cost tokens, made with key on route, from its budgets, or
// refuses it. It reports false when no limit applies to the request.
func (l *limiter) admit(route, key string, cost int, now time.Time) (budgetState, bool) {
	ls := l.set.Load()
	lim, scope, ok := ls.pick(route, key)
	if !ok || lim.zero() {
		return budgetState{}, false
	}
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(key))
	var id [sha256.Size]byte
	h.Sum(id[:0])
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.by[id]
	if b != nil && b.limits != lim {
		b = nil // the limits changed since: a budget under the new ones
	}
	if b == nil {
		if _, known := l.by[id]; !known && len(l.by) >= maxTrackedKeys {
			l.makeRoom(now)
		}
		b = &keyBudget{limits: lim, scope: scope, requests: bucket{limit: lim.RequestsPerMinute}, tokens: bucket{limit: lim.TokensPerMinute}}
		l.by[id] = b
	}
	m := lim.minute()
	b.requests.refill(now, m)
	b.tokens.refill(now, m)
	st := budgetState{enforcesReqs: lim.RequestsPerMinute > 0, enforcesTokens: lim.TokensPerMinute > 0}
	w := max(b.requests.wait(1, m), b.tokens.wait(float64(min(cost, max(lim.TokensPerMinute, 1))), m))
	if w > 0 {
		st.limited, st.retryAfter = true, w
	} else {
		if st.enforcesReqs {
			b.requests.level--
		}
		if st.enforcesTokens {
			b.tokens.level -= float64(cost)
		}
	}
	st.reqLimit, st.reqLeft, st.reqReset = lim.RequestsPerMinute, int(math.Max(0, b.requests.level)), b.requests.reset(m)
	st.tokLimit, st.tokLeft, st.tokReset = lim.TokensPerMinute, int(math.Max(0, b.tokens.level)), b.tokens.reset(m)
	return st, true
}

// keyOf returns the key a request authenticates with: the first of the headers named that is
// set, else the Authorization bearer token.
func keyOf(r *http.Request, headers ...string) string {
	for _, h := range headers {
		if k := r.Header.Get(h); k != "" {
			return k
		}
	}
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return key
}

// apiKey returns the key the call authenticates with, as its dialect reads it.
func (c *call) apiKey() string {
	switch c.api {
	case anthropic:
		return keyOf(c.r, "X-Api-Key")
	case azure:
		return keyOf(c.r, "Api-Key")
	}
	return keyOf(c.r)
}

// setLimitHeaders replaces the fixed rate-limit headers with the key's real budgets.
func (c *call) setLimitHeaders(st budgetState, now time.Time) {
	h := c.w.Header()
	if c.api == anthropic {
		set := func(kind string, limit, left int, reset time.Duration) {
			h.Set("Anthropic-Ratelimit-"+kind+"-Limit", strconv.Itoa(limit))
			h.Set("Anthropic-Ratelimit-"+kind+"-Remaining", strconv.Itoa(left))
			h.Set("Anthropic-Ratelimit-"+kind+"-Reset", now.Add(reset).UTC().Format(time.RFC3339Nano))
		}
		if st.enforcesReqs {
			set("Requests", st.reqLimit, st.reqLeft, st.reqReset)
		}
		if st.enforcesTokens {
			set("Tokens", st.tokLimit, st.tokLeft, st.tokReset)
			set("Input-Tokens", st.tokLimit, st.tokLeft, st.tokReset)
		}
		return
	}
	if st.enforcesReqs {
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(st.reqLimit))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(st.reqLeft))
		h.Set("X-Ratelimit-Reset-Requests", st.reqReset.Round(time.Millisecond).String())
	}
	if st.enforcesTokens {
		h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(st.tokLimit))
		h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(st.tokLeft))
		h.Set("X-Ratelimit-Reset-Tokens", st.tokReset.Round(time.Millisecond).String())
	}
}

// cost is what a request debits from the token budget: its prompt, plus the most it may
// answer (max_tokens), or the answer it will get when it sets no maximum.
func (c *call) cost() int {
	if c.maxTokens > 0 {
		return c.promptTokens + c.maxTokens
	}
	return c.promptTokens + Tokens(replyText(Step{}, c.s.reply, c.lastUser))
}
