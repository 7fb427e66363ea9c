package deferral

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
)

// Awaiting is a background answer a job waits for, as the job keeps it between runs (in its
// payload, a header, its metadata): the stored answer (the Stored of the call that started
// it), how many times the job looked at it, and when it started. Decider.Defer makes the first
// one and each Pending the next. Its JSON form is small, versioned and strict:
//
//	{"v":1,"id":"resp_…","origin":"3f9c…","polls":2,"started":"2026-11-23T12:00:00Z"}
//
// UnmarshalJSON refuses (with a *providers.Error of kind bad_request) anything longer than
// MaxAwaitingBytes, with unknown or missing fields, or that fails Validate: the record comes
// back from a queue, and nothing read from one is trusted.
type Awaiting struct {
	// Stored names the answer: its ID and the Origin of the provider that stored it, which
	// alone may be asked for it.
	Stored providers.StoredResponse
	// Polls is the number of looks taken so far (0 before the first), at most MaxPolls.
	Polls int
	// Started is when the call that started the answer returned (the Decider's clock).
	Started time.Time
}

// Bounds of an Awaiting read back from a queue.
const (
	// MaxAwaitingBytes bounds the JSON form of an Awaiting: a real one is about 150 bytes.
	MaxAwaitingBytes = 1024
	// MaxPolls bounds Awaiting.Polls: a day of looks a minute apart is 1 440.
	MaxPolls = 100_000
	// maxAwaitIDLen bounds the stored answer's ID and Origin (as providers.ChatRequest.Validate
	// bounds Previous's).
	maxAwaitIDLen = 256
	// maxClockSkew is how far in the future a Started may lie (another machine's clock).
	maxClockSkew = time.Minute
)

// awaitingVersion is the version of the JSON form.
const awaitingVersion = 1

// Validate reports what makes a unusable, as a *providers.Error of kind bad_request naming
// every bad field: an ID that is empty, longer than 256 bytes or holds a byte other than
// ASCII letters, digits and "_-.:"; an Origin that is empty, longer than 256 bytes or holds
// another byte than those; Polls outside [0, MaxPolls]; a zero Started, or one before 2000 or
// after 2200. nil when a is usable.
func (a Awaiting) Validate() error {
	var problems []string
	if p := checkToken("Stored.ID", a.Stored.ID); p != "" {
		problems = append(problems, p)
	}
	if p := checkToken("Stored.Origin", a.Stored.Origin); p != "" {
		problems = append(problems, p)
	}
	if a.Polls < 0 || a.Polls > MaxPolls {
		problems = append(problems, fmt.Sprintf("Polls = %d: must be between 0 and %d", a.Polls, MaxPolls))
	}
	if a.Started.Year() < 2000 || a.Started.Year() > 2200 {
		problems = append(problems, fmt.Sprintf("Started = %s: must be a time between the years 2000 and 2200",
			a.Started.UTC().Format(time.RFC3339)))
	}
	if len(problems) == 0 {
		return nil
	}
	return &providers.Error{Kind: providers.KindBadRequest, Message: "invalid Awaiting: " + strings.Join(problems, "; ")}
}

// checkToken reports what is wrong with v, the value of field, as an ID: "" when nothing.
func checkToken(field, v string) string {
	switch {
	case v == "":
		return field + " is empty"
	case len(v) > maxAwaitIDLen:
		return fmt.Sprintf("%s is %d bytes: must be at most %d", field, len(v), maxAwaitIDLen)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return fmt.Sprintf("%s = %q: only ASCII letters, digits and _-.: are allowed", field, redact.Safe(v, 64))
		}
	}
	return ""
}

// awaitingJSON is the JSON form of an Awaiting.
type awaitingJSON struct {
	V       int       `json:"v"`
	ID      string    `json:"id"`
	Origin  string    `json:"origin"`
	Polls   int       `json:"polls"`
	Started time.Time `json:"started"`
}

// MarshalJSON writes a's JSON form; an Awaiting that fails Validate is not written.
func (a Awaiting) MarshalJSON() ([]byte, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(awaitingJSON{V: awaitingVersion, ID: a.Stored.ID, Origin: a.Stored.Origin, Polls: a.Polls,
		Started: a.Started.UTC()})
}

// UnmarshalJSON reads an Awaiting's JSON form, refusing what is too long, has unknown or
// missing fields, another version, or fails Validate. The error is a *providers.Error of kind
// bad_request; a is unchanged then.
func (a *Awaiting) UnmarshalJSON(data []byte) error {
	bad := func(msg string) error {
		return &providers.Error{Kind: providers.KindBadRequest, Message: "invalid Awaiting: " + msg}
	}
	if len(data) > MaxAwaitingBytes {
		return bad(fmt.Sprintf("%d bytes: at most %d", len(data), MaxAwaitingBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w awaitingJSON
	if err := dec.Decode(&w); err != nil {
		return bad("not its JSON form: " + redact.Safe(err.Error(), 200))
	}
	if dec.More() {
		return bad("more than one JSON value")
	}
	if w.V != awaitingVersion {
		return bad(fmt.Sprintf("version %d: this version reads %d", w.V, awaitingVersion))
	}
	v := Awaiting{Stored: providers.StoredResponse{ID: w.ID, Origin: w.Origin}, Polls: w.Polls, Started: w.Started}
	if err := v.Validate(); err != nil {
		return err
	}
	*a = v
	return nil
}

// ParseAwaiting reads an Awaiting from its JSON form (see Awaiting.UnmarshalJSON).
func ParseAwaiting(data []byte) (Awaiting, error) {
	var a Awaiting
	err := a.UnmarshalJSON(data)
	return a, err
}
