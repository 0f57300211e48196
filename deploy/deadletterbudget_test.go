package deploy

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// A deployment keeps at most Config.MaxDeadLettersPerHour dead letters an hour (found by a
// hostile client: 3,000,000 lines of {} made 536 MB of dead letters in 24 s, and kept for 7
// days they could fill the disk, every deployment then failing store-full). With 5 an hour,
// 20 events without their timestamp are 20 per-event errors: the first 5 are kept, then one
// dead letter says the rest of the hour's are not; the errors count all 20. The budget is the
// scenario's, not the deployment's: deployed again within the hour, 10 more are counted and
// none kept (found by a hostile client: a loop of deploys and failing events kept 71,690 dead
// letters, 778 MB, in a minute). An hour later (the runtime's clock moved on), 3 more are kept.
func TestDeadLettersBoundedPerHour(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "sums", tumblingGraph(""))
	var shift atomic.Int64
	r := newRuntime(t, st, func(c *Config) {
		c.MaxDeadLettersPerHour = 5
		c.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	})
	deploy(t, r, "sums", 0)
	var bad [][]byte
	for i := range 20 {
		bad = append(bad, fmt.Appendf(nil, `{"key": "k", "v": %d}`, i))
	}
	ingestAll(t, r, "sums", bad, 0, 20)
	l := waitCommitted(t, r, "sums", 20)
	if l.Errors != 20 {
		t.Errorf("%d errors counted, want 20", l.Errors)
	}
	page, err := st.ReadSinkResults(t.Context(), "sums", DeadLetterSink, 0, store.MaxReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for _, r := range page[:min(len(page), 5)] {
		var dl DeadLetter
		if err := json.Unmarshal(r.Value, &dl); err != nil || dl.Offset == nil {
			t.Fatalf("dead letter %s: %v", r.Value, err)
		}
		offsets = append(offsets, *dl.Offset)
	}
	if len(page) != 6 || fmt.Sprint(offsets) != "[0 1 2 3 4]" || !strings.Contains(string(page[5].Value), "at most 5 dead letters") {
		t.Fatalf("%d dead letters, the first at offsets %v, the last %s; want 6: offsets 0 to 4, then the bound's", len(page), offsets, page[len(page)-1].Value)
	}

	deploy(t, r, "sums", 0)
	if _, err := r.Ingest(t.Context(), "sums", "in", "", bad[:10]); err != nil {
		t.Fatal(err)
	}
	// The same version goes on with the first deployment's state and counts: 20 + 10.
	if l := waitCommitted(t, r, "sums", 30); l.Errors != 30 {
		t.Errorf("the second deployment counted %d errors, want 30", l.Errors)
	}
	if page, err = st.ReadSinkResults(t.Context(), "sums", DeadLetterSink, 0, store.MaxReadLimit); err != nil || len(page) != 6 {
		t.Errorf("deployed again within the hour: %d dead letters (%v), want still 6", len(page), err)
	}

	shift.Store(int64(time.Hour))
	if _, err := r.Ingest(t.Context(), "sums", "in", "", bad[:3]); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, r, "sums", 33)
	if page, err = st.ReadSinkResults(t.Context(), "sums", DeadLetterSink, 0, store.MaxReadLimit); err != nil || len(page) != 9 {
		t.Errorf("an hour later: %d dead letters (%v), want 9", len(page), err)
	}
}

// The bytes of dead letters all scenarios keep in an hour are bounded too (found by review: a
// new scenario had 16 MiB more each, and creating one is one write). With 1 byte for them
// all, two scenarios of 20 failing events each keep no dead letter of an event, and one each
// saying why; the errors count all 20.
func TestDeadLettersBoundedForAllScenarios(t *testing.T) {
	st := sqliteStore(t)
	r := newRuntime(t, st, func(c *Config) {
		c.MaxDeadLettersPerHour = 5
		c.MaxTotalDeadLetterBytesPerHour = 1
	})
	var bad [][]byte
	for i := range 20 {
		bad = append(bad, fmt.Appendf(nil, `{"key": "k", "v": %d}`, i))
	}
	for _, name := range []string{"a", "b"} {
		createScenario(t, st, name, tumblingGraph(""))
		deploy(t, r, name, 0)
		ingestAll(t, r, name, bad, 0, 20)
		if l := waitCommitted(t, r, name, 20); l.Errors != 20 {
			t.Errorf("%s: %d errors counted, want 20", name, l.Errors)
		}
		page, err := st.ReadSinkResults(t.Context(), name, DeadLetterSink, 0, store.MaxReadLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 || !strings.Contains(string(page[0].Value), "all scenarios together keep at most 1 bytes of them an hour") {
			t.Errorf("%s: %d dead letters %v; want one saying the bound of all scenarios", name, len(page), page)
		}
	}
}
