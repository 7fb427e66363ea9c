package mocks

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one bad value of a setting, as the admin API reports it (see [AdminError]) and as
// the setters' and the scenario file's errors say it: the field at fault, the value given, and
// what is wrong with it against what is allowed ("out of range [0, 1]", "is none of […]").
type Problem struct {
	// Field names the setting as its JSON spells it ("profile.firstTokenMs", "steps[2].status",
	// "route"); "" for the request as a whole (a body that is not JSON, say).
	Field string `json:"field"`
	// Value is the value given (nil when absent or unreadable). A long one is cut; an API key
	// is never repeated.
	Value any `json:"value,omitempty"`
	// Allowed says what is wrong with the value, naming what the field accepts: a range, a
	// list of names.
	Allowed string `json:"allowed"`
}

// Error reads "field value allowed", such as `status 700 out of range [100, 599]`.
func (p *Problem) Error() string {
	var parts []string
	if p.Field != "" {
		parts = append(parts, p.Field)
	}
	switch v := p.Value.(type) {
	case nil:
	case string:
		parts = append(parts, fmt.Sprintf("%q", v))
	default:
		parts = append(parts, fmt.Sprint(v))
	}
	parts = append(parts, p.Allowed)
	return strings.Join(parts, " ")
}

// joinProblems is the error of ps, nil for none.
func joinProblems(ps []*Problem) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}
