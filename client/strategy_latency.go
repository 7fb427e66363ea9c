package client

// StrategyLatency routes a call among a provider's deployments by what each one's route for the
// call's model measured of its recent calls (resilience.Pipeline.LatencyAverages, which the
// walk records after every try: see latency.go).
//
// A deployment's score is the time a call can expect there — lower is better:
//
//	score = time × 1/(1 − error rate) × budget factor
//
// where time is the moving average of the time to first token for a stream, of the time per
// output token for a whole answer (the other measure when no deployment has one yet; a
// deployment without samples of it counts as good as the best, so that it gets explored), the
// error rate the moving average of its failures (capped at 0.9: at most ten times its time),
// and the budget factor 1 while half or more of its per-minute limits is left, rising to ten
// as they run out. Each deployment that can take the call gets a weight (best score ÷ its
// score)³ — twice as slow, an eighth of the best's weight — and the call goes to one drawn at
// random: a share latencyExplore of the calls (at most latencyExploreAll for all) is spread
// evenly over the deployments that can take it, the rest in proportion to the weights. So a
// deployment three times slower than two others keeps about 5 % of the calls, enough to be
// measured, and wins its share back within a few of them once it recovers. The others follow
// by score, then those that cannot take the call now.
//
// A call with a sticky key (WithStickyKey) draws nothing: it goes to the first deployment in
// the key's rendezvous order that can take it and whose score is at most latencyStickySlack
// times the best — its home while the home is healthy, so the conversation's prompt cache stays
// warm, and the same second choice for every turn while it is not.

// routeRoom is how many deployments a provider may have for routing to allocate nothing
// (walk.order).
const routeRoom = 8

// The constants of StrategyLatency.
const (
	// latencyPower is k in a deployment's weight (best score ÷ its score)^k.
	latencyPower = 3
	// latencyExplore is the least share of the calls each deployment that can take them gets,
	// so that one that was slow or failing keeps being measured; latencyExploreAll bounds the
	// shares of all of them together (beyond ten deployments each gets less).
	latencyExplore    = 0.03
	latencyExploreAll = 0.3
	// latencyStickySlack is how many times the best score a sticky key's deployment may score
	// and still keep the key.
	latencyStickySlack = 2
	// latencyMaxErrorRate caps the error rate in a score.
	latencyMaxErrorRate = 0.9
)

// candidate is one deployment as routeLatency weighs it.
type candidate struct {
	d     *deployment
	ok    bool       // it can take the call now
	times [2]float64 // its moving averages, ns: time to first token, time per output token; 0 unknown
	score float64    // lower is better
	hash  uint64     // the sticky key's rendezvous weight
	rank  int        // 0 the pick, 1 the others that can take the call, 2 those that cannot
}

// before reports whether a goes before b: by rank, then by score, or for a sticky key by its
// rendezvous order.
func (a *candidate) before(b *candidate, sticky bool) bool {
	switch {
	case a.rank != b.rank:
		return a.rank < b.rank
	case sticky:
		return a.hash > b.hash
	}
	return a.score < b.score
}

// orderByLatency writes into order (a copy of e.deps) the order in which StrategyLatency tries the
// deployments for a call asking for model, a stream or not, with the sticky key sticky ("" for
// none), at now (the budgets are read at that moment), and returns it. It allocates nothing for up to routeRoom deployments.
func (e *entry) orderByLatency(order []*deployment, sticky, model string, stream bool, now *moment) []*deployment {
	var room [routeRoom]candidate
	cs := room[:0]
	if len(order) > len(room) {
		cs = make([]candidate, 0, len(order))
	}
	// The least time of each measure, for the deployments without samples of it.
	var least [2]float64
	for _, d := range order {
		r := d.pipeline.Route(d.modelFor(model))
		ok, left := d.canTake(r, now)
		l := r.LatencyAverages()
		c := candidate{d: d, ok: ok, times: [2]float64{float64(l.FirstToken), float64(l.PerOutputToken)},
			score: penalty(l.ErrorRate, left), rank: 2}
		for m, t := range c.times {
			if t > 0 && (least[m] == 0 || t < least[m]) {
				least[m] = t
			}
		}
		if sticky != "" {
			c.hash = rendezvous(sticky, d.name)
		}
		cs = append(cs, c)
	}
	m := 1 // whole answers: time per output token
	if stream {
		m = 0
	}
	if least[m] == 0 {
		m = 1 - m // no deployment has that measure yet: the other
	}
	best, avail := 0.0, 0
	for i := range cs {
		c := &cs[i]
		if t := c.times[m]; least[m] > 0 {
			if t == 0 {
				t = least[m] // not measured yet: as good as the best, so it gets explored
			}
			c.score *= t
		}
		if c.ok {
			c.rank = 1
			avail++
			if best == 0 || c.score < best {
				best = c.score
			}
		}
	}
	if avail > 0 {
		if sticky != "" {
			cs[stickyPick(cs, best)].rank = 0
		} else {
			cs[e.drawLatency(cs, best, avail)].rank = 0
		}
	}
	// Insertion sort: a handful of deployments, stable, no allocation.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].before(&cs[j-1], sticky != ""); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	for i := range cs {
		order[i] = cs[i].d
	}
	return order
}

// penalty is what a deployment's time is multiplied by for its recent failures and a budget
// running low: 1/(1 − error rate), the rate capped at latencyMaxErrorRate, and, below half a
// budget left, 1/(2 × the share left), at most ten.
func penalty(errorRate, left float64) float64 {
	p := 1 / (1 - min(max(errorRate, 0), latencyMaxErrorRate))
	if left < 0.5 {
		p /= max(2*left, 0.1)
	}
	return p
}

// drawLatency draws the deployment for a call among the avail candidates of cs that can take
// it (best is their least score): each gets an even part of the exploration share and the rest
// in proportion to its weight (best ÷ score)^latencyPower. It returns the index in cs.
func (e *entry) drawLatency(cs []candidate, best float64, avail int) int {
	explore := min(latencyExplore*float64(avail), latencyExploreAll)
	var weights [routeRoom]float64
	w := weights[:0]
	if len(cs) > len(weights) {
		w = make([]float64, 0, len(cs))
	}
	total := 0.0
	for i := range cs {
		x := 0.0
		if cs[i].ok {
			x = best / cs[i].score
			for range latencyPower - 1 {
				x *= best / cs[i].score
			}
		}
		w = append(w, x)
		total += x
	}
	u, last := e.dice.float64(), 0
	for i := range cs {
		if !cs[i].ok {
			continue
		}
		last = i
		u -= explore/float64(avail) + (1-explore)*w[i]/total
		if u < 0 {
			return i
		}
	}
	return last // rounding
}

// stickyPick returns the index in cs of a sticky key's deployment: the first, in the key's
// rendezvous order, that can take the call and scores at most latencyStickySlack times best,
// the least score of those that can (so there is one).
func stickyPick(cs []candidate, best float64) int {
	pick := -1
	for i := range cs {
		c := &cs[i]
		if c.ok && c.score <= latencyStickySlack*best && (pick < 0 || c.hash > cs[pick].hash) {
			pick = i
		}
	}
	return pick
}
