package deploy

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// With less than Config.MinFreeDisk free on the store's disk, event batches are refused with a
// *DiskLowError (store.ErrStoreFull), nothing stored, and taken again once there is room; the
// deployment goes on with what it had (hostile round 137: a collect sink filled the disk, and
// then every deployment failed store-full).
func TestDiskLowRefusesBatches(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "sums", tumblingGraph(""))
	var free atomic.Int64
	free.Store(999)
	r := newRuntime(t, st, func(c *Config) {
		c.MinFreeDisk = 1000
		c.DiskFree = func() (int64, error) { return free.Load(), nil }
	})
	deploy(t, r, "sums", 0)
	_, err := r.Ingest(t.Context(), "sums", "in", "k1", [][]byte{rec(1, "a")})
	var low *DiskLowError
	if !errors.As(err, &low) || !errors.Is(err, store.ErrStoreFull) || low.Free != 999 || low.Min != 1000 {
		t.Fatalf("a batch with 999 bytes free of 1000 kept: %v; want a *DiskLowError of 999 and 1000", err)
	}
	if events, err := st.ReadEvents(t.Context(), store.EventLog{Scenario: "sums", Source: "in"}, 0, 10); err != nil || len(events) != 0 {
		t.Errorf("events stored: %d, %v; want none", len(events), err)
	}
	free.Store(1000)
	waitFor(t, "the batch taken once there is room (looked at again within a second)", func() bool {
		_, err := r.Ingest(t.Context(), "sums", "in", "k1", [][]byte{rec(1, "a")})
		return err == nil
	})
	waitFor(t, "the event processed", func() bool {
		l, ok := r.Live("sums")
		return ok && len(l.Sources) == 1 && l.Sources[0].Processed == 1
	})
}
