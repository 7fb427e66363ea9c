package steadyredis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// go-redis has one logger for the whole program (redis.SetLogger), which by default prints
// raw lines to stderr. The first store made replaces it with router, which turns each line
// into a slog record for the store it is about.

// storeKey marks the context of a store's commands with the store, so that go-redis's lines
// about them reach that store's logger.
type storeKey struct{}

var logs = struct {
	once   sync.Once
	mu     sync.Mutex
	stores []*Store // open stores, oldest first
}{}

// routeLogs installs the router, once per program, and adds s to the open stores.
func routeLogs(s *Store) {
	logs.once.Do(func() { redis.SetLogger(router{}) })
	logs.mu.Lock()
	logs.stores = append(logs.stores, s)
	logs.mu.Unlock()
}

// unrouteLogs removes s from the open stores.
func unrouteLogs(s *Store) {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for i, o := range logs.stores {
		if o == s {
			logs.stores = append(logs.stores[:i:i], logs.stores[i+1:]...)
			return
		}
	}
}

// router is go-redis's logger: a line about a store's command goes to that store's logger,
// any other to the oldest open store's, or to slog.Default() when no store is open. The lines
// are warnings: go-redis logs trouble (failed dials, broken connections).
type router struct{}

func (router) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	l := slog.Default()
	if s, ok := ctx.Value(storeKey{}).(*Store); ok {
		l = s.log
	} else {
		logs.mu.Lock()
		if len(logs.stores) > 0 {
			l = logs.stores[0].log
		}
		logs.mu.Unlock()
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	l.LogAttrs(ctx, slog.LevelWarn, msg, slog.String("component", "go-redis"))
}
