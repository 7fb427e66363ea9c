package mocks

import (
	"errors"
	"fmt"
)

// check reports the first option that NewServer cannot apply: a model or route name, a count
// beyond the bounds, an unknown default scenario, limits out of range.
func (o *options) check() error {
	if len(o.windows) > MaxModels || len(o.prefill.Models) > MaxModels || len(o.modelScripts) > MaxModels {
		return fmt.Errorf("mocks: context windows, prefill rejections and model scripts may each name at most %d models", MaxModels)
	}
	for model := range o.modelScripts {
		if model == "" {
			return errors.New("mocks: a model script needs a model name")
		}
	}
	for route := range o.routes {
		if !validRoute(route) {
			return fmt.Errorf("mocks: unknown route %q (want one of %v)", route, Routes)
		}
	}
	if o.use != "" {
		if _, ok := o.scenarios[o.use]; !ok {
			if _, ok := builtins()[o.use]; !ok {
				return fmt.Errorf("mocks: unknown scenario %q", o.use)
			}
		}
	}
	var errs []error
	if o.limits != nil {
		if err := o.limits.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rate limits: %w", err))
		}
	}
	for route, l := range o.routeLimits {
		if !validRoute(route) {
			errs = append(errs, fmt.Errorf("route rate limits: unknown route %q (want one of %v)", route, Routes))
		}
		if err := l.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("route rate limits %s: %w", route, err))
		}
	}
	if len(o.keyLimits) > MaxModels {
		errs = append(errs, fmt.Errorf("key rate limits: more than %d keys", MaxModels))
	}
	for _, l := range o.keyLimits {
		if err := l.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("key rate limits: %w", err))
		}
	}
	if o.concurrency != nil {
		if err := o.concurrency.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("concurrency limit: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mocks: %w", err)
	}
	return nil
}
