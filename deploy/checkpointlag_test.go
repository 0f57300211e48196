package deploy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scenario_server_checkpoint_lag_seconds is how long the oldest uncommitted work has waited:
// 0 on a deployment whose work is all committed, however long ago its last checkpoint was
// (the last success's age grew on a healthy deployment with nothing to do, and an alert on it
// fired; found by a new user's walk-through); while commits fail, the time since the first
// event processed after the last committed checkpoint; 0 again once one commits.
func TestCheckpointLagShown(t *testing.T) {
	st := &failingCommits{Store: sqliteStore(t)}
	reg := prometheus.NewRegistry()
	r := newRuntime(t, st, func(c *Config) { c.Metrics = reg })
	createScenario(t, st, "sums", tumblingGraph(""))
	deploy(t, r, "sums", 0)
	recs := records(200)
	ingestAll(t, r, "sums", recs[:100], 0, 100)
	waitCommitted(t, r, "sums", 100)
	waitFor(t, "nothing uncommitted, the last checkpoint 1.5 s old", func() bool {
		l, _ := r.Live("sums")
		return l.UncommittedSince.IsZero() && time.Since(l.CheckpointAt) > 1500*time.Millisecond
	})
	if g := gauges(t, reg, "sums", ""); g["scenario_server_checkpoint_lag_seconds"] != 0 {
		t.Errorf("nothing to commit: lag %v s, want 0", g["scenario_server_checkpoint_lag_seconds"])
	}

	st.fail.Store(1 << 30)
	sent := time.Now()
	ingestAll(t, r, "sums", recs, 100, 100)
	waitFor(t, "the events processed, their checkpoint failed, uncommitted for a second", func() bool {
		l, _ := r.Live("sums")
		return l.Sources[0].Processed == 200 && st.failed.Load() > 0 && !l.UncommittedSince.IsZero() && time.Since(l.UncommittedSince) > time.Second
	})
	l, _ := r.Live("sums")
	before := time.Now()
	lag := gauges(t, reg, "sums", "")["scenario_server_checkpoint_lag_seconds"]
	after := time.Now()
	since := l.UncommittedSince
	if since.Before(sent) || since.After(before) {
		t.Fatalf("uncommitted since %v; want between the send (%v) and now (%v)", since, sent, before)
	}
	if lo, hi := before.Sub(since).Seconds(), after.Sub(since).Seconds(); lag < lo || lag > hi || lag < 1 {
		t.Errorf("commits failing: lag %v s, want between %v and %v (at least 1)", lag, lo, hi)
	}

	st.fail.Store(0)
	waitCommitted(t, r, "sums", 200)
	waitFor(t, "nothing uncommitted again", func() bool { l, _ := r.Live("sums"); return l.UncommittedSince.IsZero() })
	if g := gauges(t, reg, "sums", ""); g["scenario_server_checkpoint_lag_seconds"] != 0 {
		t.Errorf("committed again: lag %v s, want 0", g["scenario_server_checkpoint_lag_seconds"])
	}
}
