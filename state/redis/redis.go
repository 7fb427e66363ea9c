// Package steadyredis shares steady's circuit state, rate-limit pauses and per-minute budgets
// between the instances of an application through Redis (github.com/redis/go-redis/v9): when
// one instance opens a provider's circuit or meets a 429, the others adopt "open until T" or
// "paused until T" within one poll interval and stop sending; one instance of the fleet probes
// a provider whose break is over, and its outcome closes or reopens the circuit for all; and
// the requests and tokens per minute of a provider are one budget for the fleet.
//
//	store := steadyredis.New(steadyredis.Options{Addr: "127.0.0.1:6379"})
//	defer store.Close()
//	p, _ := resilience.New(opts, resilience.WithName("openai"), resilience.WithSharedState(store))
//
// A call does not wait for Redis on the happy path: it reads the local copy of the advice
// (written, and refreshed, by two background goroutines) and spends budget its instance leased
// earlier in a batch (refilled in the background before it runs out). Redis is asked on a
// call's path only to elect a probe (once per break) and when the lease ran dry, each bounded
// by Timeout. When Redis is slow, unreachable or restarted, calls go on with each instance's
// local state (budgets: unless FailClosed); Err says so (for a health warning), watchers get
// an event, and the shared view resumes when Redis is back.
//
// Consistency: an instance adopts another's advice at most PollInterval (plus a Redis round
// trip) after it was written; until then it may send calls the other already knows will fail —
// at most what it sends in that interval. Advice only ever makes a pause or an opening longer,
// and expires with it. Budgets are token buckets in Redis refilled on the instances' clocks;
// the fleet sends at most the limit, plus what clock skew between instances refills early
// (skew × rate), plus, while Redis is unreachable and the store fails open, what each instance's
// own budget lets through.
package steadyredis

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/resilience"
)

// Options configure a Store.
type Options struct {
	// Addr is Redis's address, host:port. Password and Username authenticate; TLS, when set,
	// encrypts the connection.
	Addr, Username, Password string
	TLS                      *tls.Config
	// DB selects the Redis database (0 by default).
	DB int
	// Client, when set, is used instead of a client built from the fields above (sentinel,
	// cluster, your own pool); the store does not close it.
	Client redis.UniversalClient
	// Prefix starts every key ("steady:" when empty).
	Prefix string
	// PollInterval is how often the local copy is refreshed (250 ms when 0): the longest an
	// instance goes on without another's advice.
	PollInterval time.Duration
	// Timeout bounds every Redis command (200 ms when 0), and so the longest a call waits for
	// Redis when it has to (a probe's election, a dry budget lease).
	Timeout time.Duration
	// FailClosed refuses calls that need room in a fleet-wide budget while Redis cannot be
	// reached (a *resilience.SharedStateError), instead of letting them go on under each
	// instance's own budget, the default.
	FailClosed bool
}

// Store is a resilience.SharedState on Redis, which also elects probes
// (resilience.ProbeElection), keeps fleet-wide budgets (resilience.SharedBudgets) and reports
// its trouble (resilience.SharedStateWatcher). It is safe for concurrent use.
type Store struct {
	rdb        redis.UniversalClient
	own        bool
	prefix     string
	poll       time.Duration
	timeout    time.Duration
	failClosed bool
	token      string // this instance's name in probe elections

	mu       sync.RWMutex
	advice   map[string]resilience.Advice // the local copy
	names    map[string]bool              // the pipelines asked about or advised
	watchers []func(error)

	writes chan write
	err    atomic.Pointer[error]
	stop   chan struct{}
	done   sync.WaitGroup
}

// write is a background write: advice about a pipeline, or the end of its probe.
type write struct {
	name     string
	a        resilience.Advice
	endProbe bool
}

var (
	_ resilience.SharedState        = (*Store)(nil)
	_ resilience.ProbeElection      = (*Store)(nil)
	_ resilience.SharedBudgets      = (*Store)(nil)
	_ resilience.SharedStateWatcher = (*Store)(nil)
)

// advise merges advice into a pipeline's hash as resilience.Advice.Merge does: the longer
// pause, the later closing, the longer opening unless a later closing ends it. Times are
// milliseconds since the epoch, 0 for none. The key expires a minute after the last of them,
// as a pipeline still adopts an opening for a minute after its end (awaiting the probe).
var advise = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'opened', 'open_until', 'closed', 'cool_until')
local opened, untl = tonumber(h[1] or '0'), tonumber(h[2] or '0')
local closed, cool = tonumber(h[3] or '0'), tonumber(h[4] or '0')
local a_opened, a_until = tonumber(ARGV[1]), tonumber(ARGV[2])
local a_closed, a_cool = tonumber(ARGV[3]), tonumber(ARGV[4])
if a_cool > cool then cool = a_cool end
if a_closed > closed then closed = a_closed end
if a_until > untl then opened, untl = a_opened, a_until end
if untl > 0 and opened < closed then opened, untl = 0, 0 end
redis.call('HSET', KEYS[1], 'opened', opened, 'open_until', untl, 'closed', closed, 'cool_until', cool)
local last = math.max(untl, cool, closed) + 60000
redis.call('PEXPIREAT', KEYS[1], last + 1000)
return last
`)

// claim gives the probe to ARGV[1] for ARGV[2] ms unless another holds it: -1 when it is
// ARGV[1]'s, else the milliseconds the holder keeps it.
var claim = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur or cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return -1
end
return redis.call('PTTL', KEYS[1])
`)

// release deletes the probe if ARGV[1] holds it.
var release = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// take is a token bucket: ARGV[1] units a minute, refilled evenly, full at first; ARGV[2] is
// now (ms), ARGV[3] the units wanted. It takes what it holds up to ARGV[3] and returns
// {taken, ms until the rest is there}. A clock behind the bucket's last time refills nothing.
var take = redis.NewScript(`
local limit, now, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local rate = limit / 60000
local h = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(h[1]), tonumber(h[2])
if not tokens then tokens, at = limit, now end
if now > at then tokens, at = tokens + (now - at) * rate, now end
if tokens > limit then tokens = limit end
local got = math.min(want, math.floor(tokens))
if got < 0 then got = 0 end
tokens = tokens - got
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], 120000)
local wait = 0
if got < want then wait = math.ceil((want - got - tokens) / rate) end
return {got, wait}
`)

func init() {
	steady.RegisterSharedState("redis", func(c config.SharedState) (resilience.SharedState, io.Closer, error) {
		s, err := FromConfig(c)
		return s, s, err
	})
}

// FromConfig starts a store as LLM.SharedState describes it (config.SharedState): address,
// prefix, database, credentials from the environment variables it names, TLS, poll interval,
// timeout and failure mode. Importing this package is enough for steady.FromConfig to do it:
//
//	import _ "github.com/steadyllm/steady/state/redis"
func FromConfig(c config.SharedState) (*Store, error) {
	if c.Address == "" {
		return nil, errors.New("steadyredis: no Address")
	}
	user, pass := c.Credentials()
	o := Options{Addr: c.Address, Username: user, Password: pass, DB: c.DB, Prefix: c.Prefix,
		PollInterval: time.Duration(c.PollIntervalSeconds * float64(time.Second)),
		Timeout:      time.Duration(c.TimeoutSeconds * float64(time.Second)), FailClosed: c.FailClosed}
	if c.TLS {
		host, _, _ := net.SplitHostPort(c.Address)
		o.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	return New(o), nil
}

// New starts a store. Close stops it.
func New(o Options) *Store {
	s := &Store{rdb: o.Client, prefix: o.Prefix, poll: o.PollInterval, timeout: o.Timeout, failClosed: o.FailClosed,
		token: newToken(), advice: map[string]resilience.Advice{}, names: map[string]bool{},
		writes: make(chan write, 1024), stop: make(chan struct{})}
	if s.prefix == "" {
		s.prefix = "steady:"
	}
	if s.poll <= 0 {
		s.poll = 250 * time.Millisecond
	}
	if s.timeout <= 0 {
		s.timeout = 200 * time.Millisecond
	}
	if s.rdb == nil {
		s.rdb, s.own = redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password,
			DB: o.DB, TLSConfig: o.TLS, DialTimeout: s.timeout, ReadTimeout: s.timeout, WriteTimeout: s.timeout,
			MaxRetries: -1}), true
	}
	s.done.Add(2)
	go s.writer()
	go s.poller()
	return s
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Advise records a locally and sends it to Redis in the background; a full queue (Redis too
// slow for the rate of advice) drops it, which costs only the delay of the others learning it.
func (s *Store) Advise(name string, a resilience.Advice) {
	s.mu.Lock()
	s.names[name] = true
	s.advice[name] = s.advice[name].Merge(a)
	s.mu.Unlock()
	s.send(write{name: name, a: a})
}

func (s *Store) send(w write) {
	select {
	case s.writes <- w:
	default:
	}
}

// Advice returns the local copy of the advice about name.
func (s *Store) Advice(name string) resilience.Advice {
	s.mu.RLock()
	a, known := s.advice[name], s.names[name]
	s.mu.RUnlock()
	if !known {
		s.mu.Lock()
		s.names[name] = true // the poller fetches it from now on
		s.mu.Unlock()
	}
	return a
}

// ClaimProbe elects the instance that probes the pipeline name: the first to ask since the
// last probe ended, for at most hold.
func (s *Store) ClaimProbe(ctx context.Context, name string, hold time.Duration) (bool, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ms, err := claim.Run(ctx, s.rdb, []string{s.key("probe:", name)}, s.token, max(hold.Milliseconds(), 1)).Int64()
	s.note(err)
	if err != nil {
		return false, 0, err
	}
	if ms < 0 {
		return true, 0, nil
	}
	return false, time.Duration(ms) * time.Millisecond, nil
}

// EndProbe gives the probe of name back, in the background.
func (s *Store) EndProbe(name string) { s.send(write{name: name, endProbe: true}) }

// TakeBudget takes up to want units of the fleet's budget key.
func (s *Store) TakeBudget(ctx context.Context, key string, perMinute, want int64, now time.Time) (int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := take.Run(ctx, s.rdb, []string{s.key("budget:", key)}, perMinute, now.UnixMilli(), want).Int64Slice()
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("steadyredis: budget script returned %d values", len(v))
	}
	s.note(err)
	if err != nil {
		return 0, 0, err
	}
	return v[0], time.Duration(v[1]) * time.Millisecond, nil
}

// FailClosed reports Options.FailClosed.
func (s *Store) FailClosed() bool { return s.failClosed }

// Watch calls f with the error when Redis stops answering, and with nil when it answers
// again. f runs on the goroutine that noticed, so it must be quick.
func (s *Store) Watch(f func(error)) {
	s.mu.Lock()
	s.watchers = append(s.watchers, f)
	s.mu.Unlock()
}

// Err returns the last Redis error, nil while Redis answers: a store in trouble is a warning,
// never a failure, since calls go on with local state.
func (s *Store) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops the background goroutines and closes the client the store made.
func (s *Store) Close() error {
	close(s.stop)
	s.done.Wait()
	if s.own {
		return s.rdb.Close()
	}
	return nil
}

func (s *Store) key(kind, name string) string { return s.prefix + kind + name }

func (s *Store) writer() {
	defer s.done.Done()
	for {
		select {
		case <-s.stop:
			return
		case w := <-s.writes:
			ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
			var err error
			if w.endProbe {
				err = release.Run(ctx, s.rdb, []string{s.key("probe:", w.name)}, s.token).Err()
			} else {
				err = advise.Run(ctx, s.rdb, []string{s.key("advice:", w.name)},
					ms(w.a.OpenedAt), ms(w.a.OpenUntil), ms(w.a.ClosedAt), ms(w.a.CoolUntil)).Err()
			}
			cancel()
			s.note(err)
		}
	}
}

func (s *Store) poller() {
	defer s.done.Done()
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.refresh()
		}
	}
}

// refresh reads the advice about every known pipeline in one round trip.
func (s *Store) refresh() {
	s.mu.RLock()
	names := make([]string, 0, len(s.names))
	for n := range s.names {
		names = append(names, n)
	}
	s.mu.RUnlock()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	cmds := make([]*redis.SliceCmd, len(names))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HMGet(ctx, s.key("advice:", n), "opened", "open_until", "closed", "cool_until")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		s.note(err)
		return
	}
	s.note(nil)
	for i, n := range names {
		var a resilience.Advice
		if v := cmds[i].Val(); len(v) == 4 {
			a = resilience.Advice{OpenedAt: millis(v[0]), OpenUntil: millis(v[1]), ClosedAt: millis(v[2]), CoolUntil: millis(v[3])}
		}
		// Redis holds the fleet's view; the local copy keeps what it learnt itself (a write
		// may still be on its way, or Redis may have restarted empty).
		s.mu.Lock()
		s.advice[n] = s.advice[n].Merge(a)
		s.mu.Unlock()
	}
}

// note records the outcome of a Redis command and tells the watchers when Redis stops or
// starts answering again.
func (s *Store) note(err error) {
	var prev *error
	if err == nil {
		if s.err.Load() == nil {
			return
		}
		prev = s.err.Swap(nil)
	} else {
		prev = s.err.Swap(&err)
	}
	if (prev == nil) == (err == nil) {
		return
	}
	s.mu.RLock()
	ws := s.watchers
	s.mu.RUnlock()
	for _, f := range ws {
		f(err)
	}
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func millis(v any) time.Time {
	str, ok := v.(string)
	if !ok {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(str, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
