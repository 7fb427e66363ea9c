package client

import (
	"errors"
	"math/rand/v2"
	"sync"
)

// WithRandomSource makes the routing strategies that draw at random (StrategyWeighted,
// StrategyLatency) draw from src instead of the runtime's generator, so that a test with a seeded
// source (rand.NewPCG(1, 2)) routes the same way on every run. The client serializes its draws
// from src (a rand.Source need not be safe for concurrent use); the default, the runtime's
// generator, takes no lock.
func WithRandomSource(src rand.Source) Option {
	return func(b *builder) error {
		if src == nil {
			return errors.New("client: WithRandomSource with a nil source")
		}
		b.c.dice = &dice{r: rand.New(src)}
		return nil
	}
}

// dice is where the router's randomness comes from: a source of the client's (WithRandomSource)
// under a lock, or, for a nil *dice, the runtime's generator.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
}

// float64 returns a number in [0, 1).
func (d *dice) float64() float64 {
	if d == nil {
		return rand.Float64()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64()
}

// intN returns a number in [0, n); n must be above 0.
func (d *dice) intN(n int) int {
	if d == nil {
		return rand.IntN(n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.IntN(n)
}
