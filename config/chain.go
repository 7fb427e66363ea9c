package config

import (
	"fmt"
	"strings"
)

// The checks of the chain: the providers LLM.Fallback lists, the providers made of
// deployments (DeploymentOf) and their LLM.Routing.

// checkFallback resolves the fallback names to the providers' spelling.
func checkFallback(ps *problems, providers index, names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, len(names))
	seen := map[string]int{}
	for i, n := range names {
		path := fmt.Sprintf("%s.%s[%d]", keyLLM, keyFallback, i)
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
