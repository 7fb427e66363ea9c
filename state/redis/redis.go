// Package steadyredis shares steady's circuit state, rate-limit pauses and per-minute limits
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
// by Timeout; and once when a pipeline starts sharing (resilience.SharedStateJoiner), so that
// its first call knows what the fleet knows. When Redis is slow, unreachable or restarted,
// calls go on with each instance's local state (budgets: unless FailClosed); Err says so (for
// a health warning), watchers get an event, and the shared view resumes when Redis is back.
//
// Keys: with the default Prefix, a pipeline whose provider names what it calls (the steady
// providers do: a keyed hash of the base URL and the API key, see providers.SharingScope)
// shares under "steady:<kind>:<name>@<scope>", so two applications on one Redis share only
// when they call the same endpoint with the same key. With a Prefix of your own, pipelines of
// one name share under "<Prefix><kind>:<name>", whatever they call.
//
// Consistency: an instance adopts another's advice at most PollInterval (plus a Redis round
// trip) after it was written; until then it may send calls the other already knows will fail —
// at most what it sends in that interval. The local copy follows Redis: advice deleted or
// shortened there is gone or shorter here within PollInterval, except what this instance
// advised itself and has not written yet. Nothing read from Redis is trusted: a value that is
// not a time within resilience.SharedHorizon is ignored (and repaired at the next write), and
// the pipelines bound what they adopt (resilience.SharedState). Budgets are token buckets in
// Redis refilled on the instances' clocks; the fleet sends at most the limit, plus what clock
// skew between instances refills early (at most resilience.SharedClockSkew × rate, once),
// plus, while Redis is unreachable and the store fails open, what each instance's own budget
// lets through.
package steadyredis

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/resilience"
)

// DefaultPrefix starts every key when Options.Prefix is empty; the pipelines' scopes then
// keep unrelated applications apart (see the package documentation).
const DefaultPrefix = "steady:"

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
	// Prefix starts every key. Empty: DefaultPrefix, and each pipeline shares within its
	// scope (what its provider calls, with which key). Set: pipelines of one name share
	// exactly under this prefix, whatever their providers call — give each application its
	// own prefix, and one prefix to the instances of one application.
	Prefix string
	// PollInterval is how often the local copy is refreshed (250 ms when 0): the longest an
	// instance goes on without another's advice.
	PollInterval time.Duration
	// Timeout bounds every Redis command (200 ms when 0), and so the longest a call waits for
	// Redis when it has to (a probe's election, a dry budget lease), and a pipeline's first
	// read of the fleet's view.
	Timeout time.Duration
	// FailClosed refuses calls that need room in a fleet-wide per-minute limit while Redis cannot be
	// reached (a *resilience.SharedStateError), instead of letting them go on under each
	// instance's own budget, the default.
	FailClosed bool
	// Logger receives go-redis's own log lines (its dial failures, pool trouble) as records
	// with the attribute component=go-redis, slog.Default() when nil. go-redis has one logger
	// for the whole program: the first store made routes it (redis.SetLogger) to the stores'
	// loggers — a line about a command of this store goes to this store's Logger, any other
	// line to the Logger of the oldest store still open, or slog.Default() when none is. A
	// program that calls redis.SetLogger after that takes the lines back; a logger it set before the first
	// store is replaced.
	Logger *slog.Logger
}

// Store is a resilience.SharedState on Redis, which also elects probes
// (resilience.ProbeElection), keeps fleet-wide per-minute limits (resilience.SharedBudgets), reports
// its trouble (resilience.SharedStateWatcher), reads the fleet's view when a pipeline starts
// sharing (resilience.SharedStateJoiner) and scopes keys (resilience.SharedScoper). It is safe
// for concurrent use.
type Store struct {
	rdb        redis.UniversalClient
	own        bool
	prefix     string
	exact      bool // Options.Prefix was set: share under it, whatever the pipelines' scopes
	poll       time.Duration
	timeout    time.Duration
	failClosed bool
	token      string // this instance's name in probe elections
	log        *slog.Logger

	mu       sync.RWMutex
	advice   map[string]resilience.Advice // the local copy: Redis's view and what is pending
	names    map[string]int               // the names refreshed: pipelines joined (0: asked about)
	pending  map[string]*pending          // advice advised here and not written yet
	watchers resilience.Watchers

	writes chan write

	// Trouble: the outcome of the latest command (opErr), and a write of advice that failed
	// and was not made good since (writeErr). Err is the first of them; watchers hear when it
	// turns non-nil or nil. troubleMu orders the changes.
	troubleMu       sync.Mutex
	opErr, writeErr error
	err             atomic.Pointer[error]

	stop      chan struct{}
	closeOnce sync.Once
	done      sync.WaitGroup
}

var (
	_ resilience.SharedState        = (*Store)(nil)
	_ resilience.ProbeElection      = (*Store)(nil)
	_ resilience.SharedBudgets      = (*Store)(nil)
	_ resilience.SharedStateWatcher = (*Store)(nil)
	_ resilience.SharedStateJoiner  = (*Store)(nil)
	_ resilience.SharedScoper       = (*Store)(nil)
)

func init() {
	steady.RegisterSharedState("redis", func(c config.SharedState) (resilience.SharedState, io.Closer, error) {
		s, err := FromConfig(c)
		return s, s, err
	})
}

// FromConfig starts a store as LLM.SharedState describes it (config.SharedState): address,
// prefix, database, credentials from the environment variables it names, TLS, poll interval,
// timeout and failure mode. Its go-redis log lines go to slog.Default(). Importing this
// package is enough for steady.FromConfig to do it:
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
	s := &Store{rdb: o.Client, prefix: o.Prefix, exact: o.Prefix != "", poll: o.PollInterval, timeout: o.Timeout,
		failClosed: o.FailClosed, token: newToken(), log: o.Logger, advice: map[string]resilience.Advice{},
		names: map[string]int{}, pending: map[string]*pending{}, writes: make(chan write, 1024), stop: make(chan struct{})}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.poll <= 0 {
		s.poll = 250 * time.Millisecond
	}
	if s.timeout <= 0 {
		s.timeout = 200 * time.Millisecond
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.rdb == nil {
		s.rdb, s.own = redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password,
			DB: o.DB, TLSConfig: o.TLS, DialTimeout: s.timeout, ReadTimeout: s.timeout, WriteTimeout: s.timeout,
			MaxRetries: -1}), true
	}
	routeLogs(s)
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

// ScopedName returns the name a pipeline named name shares under in scope: name@scope with
// the default prefix, name alone with a Prefix of your own (Options.Prefix) or no scope.
func (s *Store) ScopedName(name, scope string) string {
	if s.exact || scope == "" {
		return name
	}
	return name + "@" + scope
}

// Advise records a locally and sends it to Redis in the background. It stays in the local
// copy, whatever Redis holds, until it is written; a full queue (Redis too slow for the rate
// of advice) delays the write to the next poll.
func (s *Store) Advise(name string, a resilience.Advice) {
	s.mu.Lock()
	p := s.pending[name]
	if p == nil {
		p = &pending{}
		s.pending[name] = p
	}
	p.a, p.seq, p.queued = p.a.Merge(a), p.seq+1, false
	s.advice[name] = s.advice[name].Merge(a)
	if _, known := s.names[name]; !known {
		s.names[name] = 0
	}
	w := write{name: name, a: p.a, seq: p.seq}
	p.queued = s.send(w)
	s.mu.Unlock()
}

// send queues w without blocking and reports whether it was queued.
func (s *Store) send(w write) bool {
	select {
	case s.writes <- w:
		return true
	default:
		return false
	}
}

// Advice returns the local copy of the advice about name. A name not joined (Join) is
// refreshed from now on.
func (s *Store) Advice(name string) resilience.Advice {
	s.mu.RLock()
	a := s.advice[name]
	_, known := s.names[name]
	s.mu.RUnlock()
	if !known {
		s.mu.Lock()
		if _, known := s.names[name]; !known {
			s.names[name] = 0
		}
		s.mu.Unlock()
	}
	return a
}

// Join counts a pipeline sharing under name, which is refreshed until as many Leaves, and
// reads the fleet's advice about it now, bounded by Timeout and ctx; while Redis is known to
// be down it does not wait for it and returns Err.
func (s *Store) Join(ctx context.Context, name string) error {
	s.mu.Lock()
	s.names[name]++
	s.mu.Unlock()
	if err := s.Err(); err != nil {
		return err
	}
	return s.read(ctx, []string{name})
}

// Leave undoes one Join: a name no pipeline shares under any more is no longer refreshed,
// and its local copy is dropped (advice not written yet is still written).
func (s *Store) Leave(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names[name]--; s.names[name] <= 0 {
		delete(s.names, name)
		delete(s.advice, name)
	}
}

// ClaimProbe elects the instance that probes the pipeline name: the first to ask since the
// last probe ended, for at most hold.
func (s *Store) ClaimProbe(ctx context.Context, name string, hold time.Duration) (bool, time.Duration, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	ms, err := claim.Run(ctx, s.rdb, []string{s.key("probe:", name)}, s.token, max(hold.Milliseconds(), 1),
		resilience.SharedHorizon.Milliseconds()).Int64()
	s.noteOp(err)
	if err != nil {
		return false, 0, err
	}
	if ms < 0 {
		return true, 0, nil
	}
	return false, time.Duration(min(ms, hold.Milliseconds())) * time.Millisecond, nil
}

// EndProbe gives the probe of name back, in the background.
func (s *Store) EndProbe(name string) { s.send(write{name: name, endProbe: true}) }

// TakeBudget takes up to want units of the fleet's budget key. The units granted are never
// more than want nor less than 0, and the wait is never negative, whatever Redis answers.
func (s *Store) TakeBudget(ctx context.Context, key string, perMinute, want int64, now time.Time) (int64, time.Duration, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	v, err := take.Run(ctx, s.rdb, []string{s.key("budget:", key)}, perMinute, now.UnixMilli(), want,
		resilience.SharedClockSkew.Milliseconds()).Int64Slice()
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("steadyredis: budget script returned %d values", len(v))
	}
	s.noteOp(err)
	if err != nil {
		return 0, 0, err
	}
	return min(max(v[0], 0), want), time.Duration(max(v[1], 0)) * time.Millisecond, nil
}

// FailClosed reports Options.FailClosed.
func (s *Store) FailClosed() bool { return s.failClosed }

// Watch registers f, to be called with the error when the store gets into trouble (Redis
// stops answering, or the advice of this instance cannot be written) and with nil when it is
// out of it, and returns the function that unregisters it. Each change is told to one watcher,
// the earliest still registered (resilience.SharedStateWatcher). f runs on the goroutine that
// noticed, so it must be quick.
func (s *Store) Watch(f func(error)) (stop func()) { return s.watchers.Add(f) }

// Err returns the store's trouble, nil when there is none: Redis does not answer, or the
// advice of this instance could not be written (and the retries at each poll fail too). A
// store in trouble is a warning, never a failure, since calls go on with local state.
func (s *Store) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close makes the writes still queued — advice this instance gave, a probe it held — within
// one Timeout in all, stops the background goroutines and closes the client the store made.
// Calling it again does nothing and returns nil.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.done.Wait()
		unrouteLogs(s)
		if s.own {
			err = s.rdb.Close()
		}
	})
	return err
}

func (s *Store) key(kind, name string) string { return s.prefix + kind + name }

// ctx bounds a command by Timeout and marks it as this store's, for its log lines.
func (s *Store) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithValue(parent, storeKey{}, s), s.timeout)
}
