package config

import (
	"fmt"
	"strconv"
	"strings"
)

// The checks of the chain: the providers LLM.Fallback and LLM.FallbackOn list (the latter's
// in fallbackon.go), the providers made of deployments (DeploymentOf), their LLM.Routing and
// their context windows.

// checkFallback resolves the names of LLM.Fallback to the providers' spelling.
func checkFallback(ps *problems, providers index, names []string) []string {
	if names == nil {
		return nil
	}
	return checkNames(ps, keyLLM+"."+keyFallback, providers, names)
}

// checkNames resolves the names of the list at path to the providers' spelling: each must
// name a provider that a call can be sent to (one of LLM.Providers that is not a deployment,
// or one their DeploymentOf forms), once.
func checkNames(ps *problems, path string, providers index, names []string) []string {
	out := make([]string, len(names))
	seen := map[string]int{}
	for i, n := range names {
		path := fmt.Sprintf("%s[%d]", path, i)
		c, ok := providers.lookup(n)
		if !ok {
			ps.add(Problem{Path: path, Value: n, Allowed: "must name a provider of LLM.Providers" + ps.didYouMean(n, providers.sorted)})
			c = n
		} else if first, dup := seen[c]; dup {
			ps.add(Problem{Path: path, Value: n, Allowed: fmt.Sprintf("is listed twice: already at index %d", first)})
		} else {
			seen[c] = i
		}
		out[i] = c
	}
	return out
}

// checkGroups reports a DeploymentOf that names a provider of its own, and returns the
// providers made of deployments, by name.
func checkGroups(ps *problems, cfg *Config) map[string][]string {
	groups := cfg.Groups()
	for g, members := range groups {
		if _, clash := cfg.Providers[g]; clash {
			for _, m := range members {
				ps.add(Problem{Path: joinPath(keyLLM+"."+keyProviders, m) + "." + keyDeploymentOf, Value: g,
					Allowed: "must name a provider made of deployments, not an entry of LLM.Providers"})
			}
		}
	}
	return groups
}

// checkRouting checks LLM.Routing against the providers made of deployments.
func checkRouting(ps *problems, groups map[string][]string, routing map[string]string) map[string]string {
	if len(routing) == 0 {
		return nil
	}
	out := make(map[string]string, len(routing))
	for _, g := range sortedKeys(routing) {
		v := strings.ToLower(strings.TrimSpace(routing[g]))
		path := joinPath(keyLLM+"."+keyRouting, g)
		if _, ok := groups[g]; !ok {
			ps.add(Problem{Path: path, Value: routing[g], Allowed: "names no provider made of deployments (set DeploymentOf on its entries)"})
		}
		if indexOf(routingStrategies, v) < 0 {
			ps.add(Problem{Path: path, Value: routing[g], Allowed: oneOf(routingStrategies)})
		}
		out[g] = v
	}
	return out
}

// checkGroupWindows reports a deployment of a provider (DeploymentOf) whose context windows
// differ from those of the provider's first deployment, by name: the client keeps the windows
// per provider and model, so the deployments of a provider cannot differ. Windows are compared
// as the client reads them, model by model: a model ContextWindows lists with 0 and one it
// leaves to a ContextWindow of 0 both have none. Deployments that serve different models say
// so with ContextWindows, the same on each. One difference per deployment is reported.
func checkGroupWindows(ps *problems, cfg *Config, groups map[string][]string) {
	eachLaterDeployment(cfg, groups, func(g string, first Provider, m string, p Provider) {
		differs := func(key string, value any, what string) {
			ps.add(Problem{Path: joinPath(keyLLM+"."+keyProviders, m) + "." + key, Value: value, Allowed: fmt.Sprintf(
				"%s, another deployment of %s: the deployments of a provider share its context windows; declare "+
					"the same %s and %s on each (or none on any), by model in %s when their models differ",
				what, show(g), keyContextWindow, keyContextWindows, keyContextWindows)})
		}
		if p.ContextWindow != first.ContextWindow {
			differs(keyContextWindow, p.ContextWindow, fmt.Sprintf("differs from the %s of %s (%s)",
				keyContextWindow, show(first.Name), declared(first.ContextWindow)))
			return
		}
		for _, model := range sortedKeys(unionKeys(p.ContextWindows, first.ContextWindows)) {
			if mine, theirs := p.windowOf(model), first.windowOf(model); mine != theirs {
				var value any
				if n, ok := p.ContextWindows[model]; ok {
					value = n
				}
				differs(joinPath(keyContextWindows, model), value, fmt.Sprintf("the window for %s (%s) differs from "+
					"that of %s (%s)", show(model), declared(mine), show(first.Name), declared(theirs)))
				break
			}
		}
	})
}

// eachLaterDeployment calls fn for every deployment of every provider made of deployments
// (groups: provider → its entries, in order) but the first, with the first to compare it with:
// what a provider keeps once, its deployments must declare alike. Providers in name order.
func eachLaterDeployment(cfg *Config, groups map[string][]string, fn func(g string, first Provider, m string, p Provider)) {
	for _, g := range sortedKeys(groups) {
		members := groups[g]
		first := cfg.Providers[members[0]]
		for _, m := range members[1:] {
			fn(g, first, m, cfg.Providers[m])
		}
	}
}

// declared describes a declared context window for a message: its value, or "none".
func declared(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

// unionKeys returns the keys of a and b.
func unionKeys(a, b map[string]int) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// checkGroupProbes reports a deployment of a provider (DeploymentOf) whose ActiveProbe differs
// from that of the provider's first deployment: the client probes a provider's circuits one
// way.
func checkGroupProbes(ps *problems, cfg *Config, groups map[string][]string) {
	eachLaterDeployment(cfg, groups, func(g string, first Provider, m string, p Provider) {
		if p.ActiveProbe != first.ActiveProbe {
			ps.add(Problem{Path: joinPath(keyLLM+"."+keyProviders, m) + "." + keyActiveProbe, Value: p.ActiveProbe,
				Allowed: fmt.Sprintf("must equal the %s of %s (%q), another deployment of %s: a provider's circuits are probed one way",
					keyActiveProbe, show(first.Name), first.ActiveProbe, show(g))})
		}
	})
}
