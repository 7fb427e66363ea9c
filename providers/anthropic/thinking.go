package anthropic

import (
	"strconv"
	"strings"
)

// ThinkingMode is how a model takes extended thinking: with a token budget, or adaptive, the
// model choosing how much to think (guided by the effort). Newer models accept only adaptive
// thinking and answer a budget_tokens with a 400 (Opus 4.7 and 4.8, Fable 5, Sonnet 5); the 4.6
// models take both, the budget deprecated; older ones only a budget.
type ThinkingMode string

// The thinking modes.
const (
	// ThinkingBudget sends thinking {"type":"enabled","budget_tokens":n} for a
	// Reasoning.BudgetTokens.
	ThinkingBudget ThinkingMode = "budget"
	// ThinkingAdaptive sends thinking {"type":"adaptive"} for a request that asks for reasoning
	// (a BudgetTokens, which cannot be sent, or an Effort, sent as output_config.effort).
	ThinkingAdaptive ThinkingMode = "adaptive"
)

// DefaultThinkingMode returns the thinking mode of model when Config.ThinkingModes names none:
// ThinkingAdaptive for the Claude models of version 4.7 and later ("claude-opus-4-7",
// "claude-sonnet-5", "claude-fable-5-…"), which refuse a budget, ThinkingBudget for the rest —
// the older models, and names this rule cannot read (a proxy's alias), which keep the
// behaviour every model had before adaptive thinking.
func DefaultThinkingMode(model string) ThinkingMode {
	major, minor, ok := claudeVersion(model)
	if ok && (major > 4 || major == 4 && minor >= 7) {
		return ThinkingAdaptive
	}
	return ThinkingBudget
}

// claudeVersion reads the version of a Claude model's name: its first number and, when the
// next part is a short number too, the minor ("claude-opus-4-7" 4.7, "claude-3-7-sonnet" 3.7,
// "claude-sonnet-5-20261001" 5.0, never taking a date for a minor).
func claudeVersion(model string) (major, minor int, ok bool) {
	parts := strings.Split(strings.ToLower(model), "-")
	if len(parts) < 2 || parts[0] != "claude" {
		return 0, 0, false
	}
	for i, part := range parts[1:] {
		n, err := strconv.Atoi(part)
		if err != nil || len(part) > 2 {
			continue
		}
		major = n
		if i+2 < len(parts) {
			if m, err := strconv.Atoi(parts[i+2]); err == nil && len(parts[i+2]) <= 2 {
				minor = m
			}
		}
		return major, minor, true
	}
	return 0, 0, false
}

// thinkingMode returns the thinking mode of model: the longest key of modes that is model or
// starts it followed by "-" (so "claude-opus-4-6" also names "claude-opus-4-6-20260215"), else
// DefaultThinkingMode.
func thinkingMode(modes map[string]ThinkingMode, model string) ThinkingMode {
	best, found := "", ThinkingMode("")
	for name, mode := range modes {
		if (model == name || strings.HasPrefix(model, name+"-")) && len(name) >= len(best) {
			best, found = name, mode
		}
	}
	if found != "" {
		return found
	}
	return DefaultThinkingMode(model)
}
