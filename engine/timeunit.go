package engine

import (
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
)

// Event times are epoch milliseconds. Timestamps in another unit read as milliseconds land far
// from now: epoch seconds of today (1.7e9) are January 1970, epoch microseconds (1.7e15) are
// past aggregate.MaxEventTime (year 37,648). The bounds below tell such times apart from real
// ones: no stream of real events has all its times between 1970-01-02 (1e8 ms) and 1973-03-03
// (1e11 ms), and epoch seconds from 1973-03-03 to the year 5138 are in that range.
const (
	secondsLikeFrom  = int64(1e8)
	secondsLikeUntil = int64(1e11)
)

// SecondsHint returns, for a source whose latest event time is latest (epoch ms), a warning
// when that time, and so every one, is between 1970-01-02 and 1973-03-03: likely a timestamp
// in seconds read as milliseconds. It returns "" otherwise.
func SecondsHint(latest int64) string {
	if latest < secondsLikeFrom || latest >= secondsLikeUntil {
		return ""
	}
	return fmt.Sprintf("every event time is before 1973-03-03 (the latest is %d ms, %s): event times are epoch milliseconds; if the timestamp is in seconds, multiply it by 1000",
		latest, time.UnixMilli(latest).UTC().Format(time.RFC3339Nano))
}

// TimeHint returns a warning about the event times source id has seen in a bounded run (a
// test, `run`), or "" when there is none: SecondsHint's, or, for a source without a
// timestamp expression none of whose events came with a time of its own, that every event
// was at 0 (a new-user round: all in the first windows, and nothing said).
func (e *Engine) TimeHint(id string) string {
	n := e.sources[id]
	if n == nil || !n.seen {
		return ""
	}
	if n.maxTime == 0 && n.timestamp == nil && !n.ownTime && e.opts.Bounded {
		return "the source has no timestamp expression, and no event came with a time of its own: every event is at event time 0 (1970-01-01T00:00:00Z), in the same first windows " +
			"(deployed, an HTTP source's event gets the time the server accepted it, a Kafka source's its record's timestamp); to use the events' own times, set timestamp to an expression on #input, " +
			`or give each as {"sourceId": ..., "record": {...}, "timestamp": <ms>}`
	}
	return SecondsHint(n.maxTime)
}

// secondsAmongMillis is the per-event error of an event time t between 1970-01-02 and
// 1973-03-03 at a source whose latest event time is latest, after 1973-03-03: a timestamp in
// seconds among milliseconds, refused before it is timed, as a far-future one is. Counted
// late, it was dropped with nothing to say why (new-user round 153: an event with
// "time": 1714557650 among times in milliseconds).
func secondsAmongMillis(t, latest int64) error {
	return fmt.Errorf("event time %d ms is %s, before 1973-03-03, where the source's latest is %s: event times are epoch milliseconds; if the timestamp is in seconds, multiply it by 1000",
		t, time.UnixMilli(t).UTC().Format(time.RFC3339Nano), time.UnixMilli(latest).UTC().Format(time.RFC3339Nano))
}

// outOfRange is the per-event error of an event time t outside ±aggregate.MaxEventTime, with
// the unit it was likely written in when dividing by a thousand or a million brings it to
// within a few hundred years of now.
func outOfRange(t int64) error {
	hint := ""
	near := func(ms int64) bool { return ms > -5e12 && ms < 2e13 } // 1811 to 2603
	switch {
	case near(t / 1000):
		hint = "; event times are epoch milliseconds: if the timestamp is in microseconds, divide it by 1000"
	case near(t / 1_000_000):
		hint = "; event times are epoch milliseconds: if the timestamp is in nanoseconds, divide it by 1,000,000"
	}
	return fmt.Errorf("event time %d ms is out of range (±%d ms, the year %d)%s", t, aggregate.MaxEventTime, time.UnixMilli(aggregate.MaxEventTime).UTC().Year(), hint)
}
