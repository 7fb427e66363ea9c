// Package steadyredis shares steady's circuit openings and rate-limit pauses between the
// instances of an application through Redis (github.com/redis/go-redis/v9): when one instance
// opens a provider's circuit or meets a 429, the others adopt "open until T" or "paused until
// T" within one poll interval and stop sending.
//
//	store := steadyredis.New(steadyredis.Options{Addr: "127.0.0.1:6379"})
//	defer store.Close()
//	p, _ := resilience.New(opts, resilience.WithName("openai"), resilience.WithSharedState(store))
//
// Nothing of it is on a call's path: a call reads the local copy; advice is written, and the
// copy refreshed, by two background goroutines. When Redis is slow, unreachable or restarted,
// calls go on with each instance's local state; Err says so (for a health warning) and the
// shared view resumes when Redis is back.
//
// Consistency: an instance adopts another's advice at most PollInterval (plus a Redis round
// trip) after it was written; until then it may send calls the other already knows will fail —
// at most what it sends in that interval. Advice only ever makes a pause or an opening longer,
// and expires with it.
package steadyredis

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/steadyllm/steady/resilience"
)

// Options configure a Store.
type Options struct {
	// Addr is Redis's address, host:port. Password and Username authenticate; TLS is set on
	// Client for a connection of your own.
	Addr, Username, Password string
	// Client, when set, is used instead of a client built from Addr (TLS, sentinel, cluster).
	Client redis.UniversalClient
	// Prefix starts every key ("steady:" when empty).
	Prefix string
	// PollInterval is how often the local copy is refreshed (250 ms when 0): the longest an
	// instance goes on without another's advice.
	PollInterval time.Duration
	// Timeout bounds every Redis command (200 ms when 0).
	Timeout time.Duration
}

// Store is a resilience.SharedState on Redis. It is safe for concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	own     bool
	prefix  string
	poll    time.Duration
	timeout time.Duration

	mu     sync.RWMutex
	advice map[string]resilience.Advice // the local copy
	names  map[string]bool              // the pipelines asked about or advised

	writes chan write
	err    atomic.Pointer[error]
	stop   chan struct{}
	done   sync.WaitGroup
}

type write struct {
	name string
	a    resilience.Advice
}

var _ resilience.SharedState = (*Store)(nil)

// raise sets each field to the larger of its value and the argument's (milliseconds since the
// epoch) and makes the key expire with its latest field.
var raise = redis.NewScript(`
local latest = 0
for i = 1, #ARGV, 2 do
  local v = tonumber(ARGV[i + 1])
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if v > cur then redis.call('HSET', KEYS[1], ARGV[i], v) else v = cur end
  if v > latest then latest = v end
end
if latest > 0 then redis.call('PEXPIREAT', KEYS[1], latest + 1000) end
return latest
`)

// New starts a store. Close stops it.
func New(o Options) *Store {
	s := &Store{rdb: o.Client, prefix: o.Prefix, poll: o.PollInterval, timeout: o.Timeout,
		advice: map[string]resilience.Advice{}, names: map[string]bool{},
		writes: make(chan write, 1024), stop: make(chan struct{})}
	if s.rdb == nil {
		s.rdb, s.own = redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password,
			DialTimeout: 500 * time.Millisecond, MaxRetries: -1}), true
	}
	if s.prefix == "" {
		s.prefix = "steady:"
	}
	if s.poll <= 0 {
		s.poll = 250 * time.Millisecond
	}
	if s.timeout <= 0 {
		s.timeout = 200 * time.Millisecond
	}
	s.done.Add(2)
	go s.writer()
	go s.poller()
	return s
}

// Advise records a locally and sends it to Redis in the background; a full queue (Redis too
// slow for the rate of advice) drops it, which costs only the delay of the others learning it.
func (s *Store) Advise(name string, a resilience.Advice) {
	s.merge(name, a)
	select {
	case s.writes <- write{name, a}:
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

func (s *Store) merge(name string, a resilience.Advice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[name] = true
	cur := s.advice[name]
	if a.OpenUntil.After(cur.OpenUntil) {
		cur.OpenUntil = a.OpenUntil
	}
	if a.CoolUntil.After(cur.CoolUntil) {
		cur.CoolUntil = a.CoolUntil
	}
	s.advice[name] = cur
}

func (s *Store) key(name string) string { return s.prefix + "advice:" + name }

func (s *Store) writer() {
	defer s.done.Done()
	for {
		select {
		case <-s.stop:
			return
		case w := <-s.writes:
			var args []any
			if !w.a.OpenUntil.IsZero() {
				args = append(args, "open_until", w.a.OpenUntil.UnixMilli())
			}
			if !w.a.CoolUntil.IsZero() {
				args = append(args, "cool_until", w.a.CoolUntil.UnixMilli())
			}
			if len(args) == 0 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
			err := raise.Run(ctx, s.rdb, []string{s.key(w.name)}, args...).Err()
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
			cmds[i] = p.HMGet(ctx, s.key(n), "open_until", "cool_until")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		s.note(err)
		return
	}
	s.note(nil)
	now := time.Now()
	for i, n := range names {
		vals := cmds[i].Val()
		var a resilience.Advice
		if len(vals) == 2 {
			a.OpenUntil, a.CoolUntil = millis(vals[0]), millis(vals[1])
		}
		s.mu.Lock()
		cur := s.advice[n]
		// Redis holds the fleet's view; the local copy keeps what it learnt itself and has not
		// expired (a write may still be on its way).
		if cur.OpenUntil.After(a.OpenUntil) && cur.OpenUntil.After(now) {
			a.OpenUntil = cur.OpenUntil
		}
		if cur.CoolUntil.After(a.CoolUntil) && cur.CoolUntil.After(now) {
			a.CoolUntil = cur.CoolUntil
		}
		s.advice[n] = a
		s.mu.Unlock()
	}
}

func (s *Store) note(err error) {
	if err == nil {
		if s.err.Load() != nil {
			s.err.Store(nil)
		}
		return
	}
	s.err.Store(&err)
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
