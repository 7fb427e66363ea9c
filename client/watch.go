package client

import "github.com/steadyllm/steady/resilience"

// Watch sends the events of every provider's pipeline — every deployment and every route —
// to fn from now on, beside WithObserver's and the telemetry's, until stop is called: those of
// the given types, or every event when none is given (see resilience.Pipeline.Watch).
// Event.Pipeline names the deployment, Event.Route the model. It is how a status page listens
// while it is mounted: a client nobody watches builds no event for it, and one watched for
// what goes wrong only builds no event more for a call that goes well. fn must be quick and
// safe for concurrent use, as an Observer. A nil fn watches nothing; stop may be called more
// than once.
func (c *Client) Watch(fn resilience.Observer, types ...resilience.EventType) (stop func()) {
	var stops []func()
	for _, name := range c.order {
		for _, d := range c.entries[name].deps {
			stops = append(stops, d.pipeline.Watch(fn, types...))
		}
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// Providers returns the names of the client's providers in the order they were added
// (WithProvider, WithDeployments); Chain says which of them calls go to, in which order.
func (c *Client) Providers() []string { return append([]string(nil), c.order...) }
