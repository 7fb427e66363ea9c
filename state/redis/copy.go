package steadyredis

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/steadyllm/steady/resilience"
)

// write is a background write: advice about a pipeline (the merge of what is pending, seq
// its version), or the end of its probe.
type write struct {
	name     string
	a        resilience.Advice
	seq      uint64
	endProbe bool
}

// pending is advice this instance gave and Redis has not confirmed: it stays in the local
// copy whatever Redis holds, and is written again at each poll until a write succeeds.
type pending struct {
	a      resilience.Advice
	seq    uint64 // its version, one more at each Advise
	queued bool   // a write of this version is queued or running
}

func (s *Store) writer() {
	defer s.done.Done()
	for {
		select {
		case <-s.stop:
			s.flush()
			return
		case w := <-s.writes:
			ctx, cancel := s.ctx(context.Background())
			s.write(ctx, w)
			cancel()
		}
	}
}

// write makes the background write w.
func (s *Store) write(ctx context.Context, w write) {
	if w.endProbe {
		s.noteOp(release.Run(ctx, s.rdb, []string{s.key("probe:", w.name)}, s.token).Err())
		return
	}
	stored, err := s.writeAdvice(ctx, w)
	s.wrote(w, stored, err)
}

// flush makes the writes still queued as the store closes, within one Timeout in all: a
// circuit that opened just before Close is still told to the fleet, and a probe this instance
// held is released for another to take, but a Redis that does not answer cannot hold Close up
// for longer than a command may take.
func (s *Store) flush() {
	ctx, cancel := s.ctx(context.Background())
	defer cancel()
	for ctx.Err() == nil {
		select {
		case w := <-s.writes:
			s.write(ctx, w)
		default:
			return
		}
	}
}

// writeAdvice merges w's advice into Redis (repairing what it finds there) and returns what
// Redis holds now.
func (s *Store) writeAdvice(ctx context.Context, w write) (resilience.Advice, error) {
	v, err := advise.Run(ctx, s.rdb, []string{s.key("advice:", w.name)},
		ms(w.a.OpenedAt), ms(w.a.OpenUntil), ms(w.a.ClosedAt), ms(w.a.CoolUntil),
		time.Now().UnixMilli(), resilience.SharedHorizon.Milliseconds()).Slice()
	if err == nil && len(v) != 4 {
		err = errors.New("steadyredis: the advice script returned a wrong answer")
	}
	if err != nil {
		return resilience.Advice{}, err
	}
	return parse(v, time.Now()), nil
}

// wrote records the outcome of write w: on success Redis's view replaces the local copy
// (with what was advised since), and w's advice is no longer pending; on failure it is
// written again at the next poll.
func (s *Store) wrote(w write, stored resilience.Advice, err error) {
	s.mu.Lock()
	p := s.pending[w.name]
	if err != nil {
		if p != nil && p.seq == w.seq {
			p.queued = false
		}
	} else {
		if p != nil && p.seq == w.seq {
			delete(s.pending, w.name)
			p = nil
		}
		if _, known := s.names[w.name]; known {
			s.advice[w.name] = local(stored, p)
		}
	}
	left := len(s.pending)
	s.mu.Unlock()
	s.noteOp(opError(err))
	s.noteWrite(err, left)
}

// local is the local copy: Redis's view a and what is pending here (p, nil for nothing).
func local(a resilience.Advice, p *pending) resilience.Advice {
	if p != nil {
		return a.Merge(p.a)
	}
	return a
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
			s.retry()
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
	if len(names) > 0 {
		_ = s.read(context.Background(), names)
	}
}

// read reads the advice about names in one round trip and makes the local copy follow it:
// Redis's view, with what is pending here. A key that is not a hash counts as no advice
// (the next write repairs it); only a failure to reach Redis is an error.
func (s *Store) read(ctx context.Context, names []string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	cmds := make([]*redis.SliceCmd, len(names))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HMGet(ctx, s.key("advice:", n), "opened", "open_until", "closed", "cool_until")
		}
		return nil
	})
	if err = opError(err); err != nil {
		s.noteOp(err)
		return err
	}
	s.noteOp(nil)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range names {
		if _, known := s.names[n]; !known {
			continue // left meanwhile
		}
		var a resilience.Advice
		if cmds[i].Err() == nil {
			a = parse(cmds[i].Val(), now)
		}
		s.advice[n] = local(a, s.pending[n])
	}
	return nil
}

// retry queues again the pending advice whose write failed, and forgets pending advice that
// is over (a minute after its last time, as Redis would), which nobody needs written.
func (s *Store) retry() {
	now := time.Now()
	s.mu.Lock()
	for n, p := range s.pending {
		last := p.a.OpenUntil
		for _, t := range []time.Time{p.a.CoolUntil, p.a.ClosedAt} {
			if t.After(last) {
				last = t
			}
		}
		if now.Sub(last) > time.Minute {
			delete(s.pending, n)
			continue
		}
		if !p.queued {
			p.queued = s.send(write{name: n, a: p.a, seq: p.seq})
		}
	}
	left := len(s.pending)
	s.mu.Unlock()
	if left == 0 {
		s.noteWrite(nil, 0)
	}
}

// opError returns err unless it says nothing about Redis's reach: no error, redis.Nil, or an
// error Redis answered about one command (a key of the wrong type), which the scripts repair.
func opError(err error) error {
	var rerr redis.Error
	if err == nil || errors.Is(err, redis.Nil) || (errors.As(err, &rerr) && !isConnErr(rerr)) {
		return nil
	}
	return err
}

// isConnErr reports whether a reply from Redis still means it cannot serve: loading,
// read-only replica, out of memory, busy script, not authenticated.
func isConnErr(err redis.Error) bool {
	msg := err.Error()
	for _, p := range []string{"LOADING", "READONLY", "OOM", "BUSY", "NOAUTH", "WRONGPASS", "NOPERM", "MASTERDOWN", "CLUSTERDOWN"} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return false
}

// noteOp records the outcome of a command: Redis answers (nil) or not.
func (s *Store) noteOp(err error) {
	if err == nil && s.err.Load() == nil {
		return // the common case: no trouble before, none now
	}
	s.trouble(func() { s.opErr = err })
}

// noteWrite records the outcome of a write of advice: err, or nil once the write succeeded or
// nothing is left pending (left).
func (s *Store) noteWrite(err error, left int) {
	if err == nil && left > 0 {
		return // other advice still waits to be written
	}
	if err == nil && s.err.Load() == nil {
		return
	}
	s.trouble(func() { s.writeErr = err })
}

// trouble applies change to the store's errors and tells the watchers when the store gets
// into trouble or out of it, once per change.
func (s *Store) trouble(change func()) {
	s.troubleMu.Lock()
	defer s.troubleMu.Unlock()
	before := s.Err()
	change()
	now := s.opErr
	if now == nil {
		now = s.writeErr
	}
	if now != nil {
		s.err.Store(&now)
	} else {
		s.err.Store(nil)
	}
	if (before == nil) == (now == nil) {
		return
	}
	s.watchers.Notify(now)
}

// parse reads the four times of an advice hash (opened, open until, closed, cool until):
// a value that is not a whole number of milliseconds after 1970 and within
// resilience.SharedHorizon of now counts as none.
func parse(v []any, now time.Time) resilience.Advice {
	if len(v) != 4 {
		return resilience.Advice{}
	}
	limit := now.Add(resilience.SharedHorizon).UnixMilli()
	t := func(x any) time.Time {
		var n int64
		switch x := x.(type) {
		case int64:
			n = x
		case string:
			i, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				f, ferr := strconv.ParseFloat(x, 64)
				if ferr != nil || math.IsNaN(f) || f < 0 || f > float64(limit) {
					return time.Time{}
				}
				i = int64(f)
			}
			n = i
		default:
			return time.Time{}
		}
		if n <= 0 || n > limit {
			return time.Time{}
		}
		return time.UnixMilli(n)
	}
	a := resilience.Advice{OpenedAt: t(v[0]), OpenUntil: t(v[1]), ClosedAt: t(v[2]), CoolUntil: t(v[3])}
	if a.OpenUntil.IsZero() {
		a.OpenedAt = time.Time{}
	}
	return a
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
