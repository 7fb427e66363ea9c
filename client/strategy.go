package client

import (
	"cmp"
	"slices"

	"github.com/steadyllm/steady/providers"
)

// order returns the deployments of e in the order to try them for walk w's call asking for
// model, the ones that can take it now first; the call's sticky key, when it has one, orders
// them by rendezvous hashing on it, so the same key lands on the same deployment (its prompt
// cache stays warm) while it can take calls. The order is written in w's own room for it
// (w.order: no allocation for up to len(w.order) deployments) and holds until the next route.
func (e *entry) order(w *walk, model string) []*deployment {
	return e.orderIn(w.order[:0], w, model)
}

// orderIn is order writing the order into buf (appended to; nil allocates), for a hedge that
// looks ahead while the walk's own order is in use.
func (e *entry) orderIn(buf []*deployment, w *walk, model string) []*deployment {
	order := append(buf, e.deps...)
	sticky := w.op.pl.sticky
	if e.strategy == StrategyLatency {
		return e.orderByLatency(order, sticky, model, w.need.Has(providers.CapStreaming), &moment{c: w.c})
	}
	switch {
	case sticky != "":
		slices.SortStableFunc(order, func(a, b *deployment) int {
			return cmp.Compare(rendezvous(sticky, b.name), rendezvous(sticky, a.name))
		})
	case e.strategy == StrategyWeighted:
		total := 0
		for _, d := range order {
			total += d.weight
		}
		// Draw the order without replacement, each pick in proportion to its weight.
		for i := range order {
			r := e.dice.intN(total)
			for j := i; j < len(order); j++ {
				if r < order[j].weight {
					order[i], order[j] = order[j], order[i]
					break
				}
				r -= order[j].weight
			}
			total -= order[i].weight
		}
	case e.strategy == StrategyRoundRobin:
		k := int(e.next.Add(1)-1) % len(order)
		order = append(append(order[:0], e.deps[k:]...), e.deps[:k]...)
	case e.strategy == StrategyLeastInFlight:
		slices.SortStableFunc(order, func(a, b *deployment) int {
			return a.pipeline.InFlight() - b.pipeline.InFlight()
		})
	case e.strategy == StrategyMostHeadroom:
		slices.SortStableFunc(order, func(a, b *deployment) int {
			ha, hb := headroomOf(a, a.modelFor(model)), headroomOf(b, b.modelFor(model))
			switch {
			case ha > hb:
				return -1
			case ha < hb:
				return 1
			}
			return 0
		})
	}
	// The deployments that can take the call now go first, in the strategy's order.
	slices.SortStableFunc(order, func(a, b *deployment) int {
		aa, ab := a.available(a.modelFor(model)), b.available(b.modelFor(model))
		switch {
		case aa && !ab:
			return -1
		case ab && !aa:
			return 1
		}
		return 0
	})
	return order
}

// rendezvous is the weight of the deployment named name for the sticky key (rendezvous
// hashing: a key goes to the deployment of the highest weight, and to the next highest when
// that one cannot take it), FNV-1a over the key, a zero byte and the name.
func rendezvous(key, name string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h *= prime // the zero byte between them
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * prime
	}
	return h
}
