package deploy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// failingReads is a store whose reads of events fail while fail is set, counting them.
type failingReads struct {
	store.Store
	fail   atomic.Bool
	failed atomic.Int64
}

func (s *failingReads) ReadEvents(ctx context.Context, log store.EventLog, from int64, limit int) ([]store.Event, error) {
	if s.fail.Load() {
		s.failed.Add(1)
		return nil, errors.New("connection refused")
	}
	return s.Store.ReadEvents(ctx, log, from, limit)
}

// A store that refuses reads of events for a while is logged once, not at every retry (two
// a second: new-user round 136), and the deployment says when it reads again, with how many
// failed reads it left out; the event accepted meanwhile is processed.
func TestReadErrorsLoggedOnce(t *testing.T) {
	st := &failingReads{Store: sqliteStore(t)}
	createScenario(t, st, "sums", tumblingGraph(""))
	var out lockedBuffer
	r := newRuntime(t, st, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	deploy(t, r, "sums", 0)
	st.fail.Store(true)
	ingestAll(t, r, "sums", [][]byte{rec(1, "a")}, 0, 1)
	waitFor(t, "five failed reads", func() bool { return st.failed.Load() >= 5 })
	if n := strings.Count(out.String(), `msg="reading events"`); n != 1 {
		t.Errorf("%d lines for %d failed reads; want 1:\n%s", n, st.failed.Load(), out.String())
	}
	st.fail.Store(false)
	waitFor(t, "the event processed", func() bool {
		l, ok := r.Live("sums")
		return ok && len(l.Sources) == 1 && l.Sources[0].Processed == 1
	})
	// Logged once the read that took it has returned (the counts are published within it:
	// the fresh-clone CI looked before).
	waitFor(t, "the line for reading again", func() bool {
		return strings.Contains(out.String(), `msg="reading events again" scenario=sums deployment=1 left_out=`)
	})
	if n := strings.Count(out.String(), `msg="reading events"`); n != 1 {
		t.Errorf("%d lines for the failed reads in all; want 1:\n%s", n, out.String())
	}
}
