package cost

import (
	"fmt"
	"strings"
	"time"
)

// Window is the period a budget's spend is kept over. Windows are calendar periods in the
// ledger's time zone (LedgerOptions.Location, UTC by default): the spend starts again from 0
// when the minute, hour, day or month turns, and a call refused for a budget may pass then —
// which is the RetryAfter its error carries. Calendar windows are what invoices count in, they
// need no history of calls, and every instance of a fleet agrees on them; a rolling window
// (the last 24 hours) would need each call's time kept until it leaves the window.
type Window uint8

// The windows.
const (
	Minute Window = iota + 1
	Hour
	Day
	Month
)

// Windows lists the windows' names, for messages and configuration.
var Windows = []string{"minute", "hour", "day", "month"}

// ParseWindow reads a window's name (minute, hour, day, month), in any case.
func ParseWindow(s string) (Window, error) {
	for i, name := range Windows {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Window(i + 1), nil
		}
	}
	return 0, fmt.Errorf("cost: window %q: must be one of %s", s, strings.Join(Windows, ", "))
}

// String returns the window's name.
func (w Window) String() string {
	if w >= Minute && w <= Month {
		return Windows[w-1]
	}
	return "unknown"
}

// Bounds returns the window that holds t in loc (nil: UTC): [start, end). A day runs from
// midnight to midnight of loc — 23 or 25 hours across a change of daylight saving time — and
// a month from the first of the month. Minutes and hours follow loc's offset at t, so an hour
// of a zone 30 minutes off UTC starts at its own full hour.
func (w Window) Bounds(t time.Time, loc *time.Location) (start, end time.Time) {
	if loc == nil {
		loc = time.UTC
	}
	local := t.In(loc)
	switch w {
	case Minute:
		start = t.Add(-time.Duration(local.Second())*time.Second - time.Duration(local.Nanosecond()))
		return start, start.Add(time.Minute)
	case Hour:
		start = t.Add(-time.Duration(local.Minute())*time.Minute - time.Duration(local.Second())*time.Second -
			time.Duration(local.Nanosecond()))
		return start, start.Add(time.Hour)
	case Day:
		y, m, d := local.Date()
		start, end = time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	default:
		y, m, _ := local.Date()
		start, end = time.Date(y, m, 1, 0, 0, 0, 0, loc), time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	}
	if t.Before(start) || !t.Before(end) {
		// A zone whose midnight does not exist on that day (a change of daylight saving time at
		// 00:00): time.Date moved it; count the window in UTC rather than one that misses t.
		return w.Bounds(t, time.UTC)
	}
	return start, end
}
