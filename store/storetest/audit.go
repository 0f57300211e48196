package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// testAudit appends audit entries and lists them with each filter and the paging cursor.
func testAudit(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	if list, err := s.ListAudit(ctx, store.AuditFilter{}); err != nil || list != nil {
		t.Fatalf("ListAudit of an empty store = %v, %v; want nil, nil", list, err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	entries := []store.AuditEntry{
		{Time: t0, Subject: "token:1", Name: "ci", Address: "10.0.0.1", Action: "scenario.create", Scenario: "fraud", Version: 1, Outcome: "ok", RequestID: "r1"},
		{Time: t0.Add(time.Minute), Subject: "token:1", Name: "ci", Address: "10.0.0.1", Action: "deploy", Scenario: "fraud", Version: 1, Outcome: "ok", RequestID: "r2"},
		{Time: t0.Add(2 * time.Minute), Subject: "oidc|anna", Name: "anna@example.com", Address: "10.0.0.2", Action: "deploy", Scenario: "alerts", Version: 3, Outcome: "deployment-active", RequestID: "r3"},
		{Time: t0.Add(3 * time.Minute), Subject: "oidc|anna", Name: "anna@example.com", Address: "10.0.0.2", Action: "results.read", Scenario: "fraud", Outcome: "ok"},
		// Nanoseconds are cut to microseconds, as every store time.
		{Time: t0.Add(4*time.Minute + 1500), Subject: "", Name: "local", Address: "127.0.0.1", Action: "token.create", Target: `token 7 "ci" (deployer, no expiry)`, Outcome: "ok"},
	}
	for i, e := range entries {
		got := must(s.AppendAudit(ctx, e))(t)
		if got.ID == 0 || (i > 0 && got.ID <= entries[i-1].ID) {
			t.Fatalf("entry %d: ID %d after %d; want increasing", i, got.ID, entries[max(i-1, 0)].ID)
		}
		entries[i] = got
	}
	if want := t0.Add(4*time.Minute + 1000); !entries[4].Time.Equal(want) {
		t.Errorf("Time = %v; want %v", entries[4].Time, want)
	}
	ids := func(list []store.AuditEntry) string {
		var b []string
		for _, e := range list {
			for i, w := range entries {
				if w.ID == e.ID {
					b = append(b, fmt.Sprint(i))
					if e != w {
						t.Errorf("listed %+v; appended %+v", e, w)
					}
				}
			}
		}
		return strings.Join(b, ",")
	}
	for _, tc := range []struct {
		name string
		f    store.AuditFilter
		want string
	}{
		{"all", store.AuditFilter{}, "0,1,2,3,4"},
		{"from", store.AuditFilter{From: t0.Add(2 * time.Minute)}, "2,3,4"},
		{"to is exclusive", store.AuditFilter{To: t0.Add(2 * time.Minute)}, "0,1"},
		{"from and to", store.AuditFilter{From: t0.Add(time.Minute), To: t0.Add(3*time.Minute + time.Microsecond)}, "1,2,3"},
		{"identity by subject", store.AuditFilter{Identity: "token:1"}, "0,1"},
		{"identity by name", store.AuditFilter{Identity: "anna@example.com"}, "2,3"},
		{"action", store.AuditFilter{Action: "deploy"}, "1,2"},
		{"scenario", store.AuditFilter{Scenario: "fraud"}, "0,1,3"},
		{"outcome", store.AuditFilter{Outcome: "deployment-active"}, "2"},
		{"scenario and action", store.AuditFilter{Scenario: "fraud", Action: "deploy"}, "1"},
		{"no match", store.AuditFilter{Action: "cancel"}, ""},
		{"limit", store.AuditFilter{Limit: 2}, "0,1"},
		{"after", store.AuditFilter{After: entries[1].ID, Limit: 2}, "2,3"},
		{"after the last", store.AuditFilter{After: entries[4].ID}, ""},
	} {
		list, err := s.ListAudit(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(list); got != tc.want {
			t.Errorf("%s: entries %q; want %q", tc.name, got, tc.want)
		}
	}

	// Fields are cut to MaxAuditFieldBytes at a UTF-8 boundary: 255 bytes of "a" and "é"
	// (2 bytes) would end mid-rune at 256, so 255 are kept.
	long := must(s.AppendAudit(ctx, store.AuditEntry{Name: strings.Repeat("a", 255) + "é", Address: strings.Repeat("x", 1000), Action: "deploy", Target: strings.Repeat("t", 300), Outcome: "ok"}))(t)
	if len(long.Name) != 255 || len(long.Address) != store.MaxAuditFieldBytes || len(long.Target) != store.MaxAuditFieldBytes {
		t.Errorf("cut lengths %d, %d, %d; want 255, %d, %d", len(long.Name), len(long.Address), len(long.Target), store.MaxAuditFieldBytes, store.MaxAuditFieldBytes)
	}
	list := must(s.ListAudit(ctx, store.AuditFilter{After: entries[4].ID}))(t)
	if len(list) != 1 || list[0] != long {
		t.Errorf("the cut entry listed as %+v; want %+v", list, long)
	}
	if long.Time.IsZero() {
		t.Error("an entry without Time did not get the store's clock")
	}
}

// testAuditPagingConcurrent: a reader paging with After while 4 writers append 50 entries each
// sees every entry exactly once, in id order: ids are committed in the order they are given.
func testAuditPagingConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.AppendAudit(ctx, store.AuditEntry{Name: fmt.Sprintf("w%d", w), Action: "deploy", Outcome: "ok", RequestID: fmt.Sprint(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[int64]bool{}
	var after int64
	finished := false
	for !finished {
		select {
		case <-done:
			finished = true // one more pass reads what the last writes committed
		default:
		}
		for {
			page, err := s.ListAudit(ctx, store.AuditFilter{After: after, Limit: 7})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				if e.ID <= after || seen[e.ID] {
					t.Fatalf("id %d after %d, or twice", e.ID, after)
				}
				seen[e.ID] = true
				after = e.ID
			}
			if len(page) < 7 {
				break
			}
		}
	}
	all, err := s.ListAudit(ctx, store.AuditFilter{Limit: store.MaxAuditPage})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each || len(seen) != writers*each {
		t.Fatalf("%d entries stored, %d seen by paging; want %d both", len(all), len(seen), writers*each)
	}
}

// testAuditRetention: PruneAudit deletes the entries recorded before a time, in chunks (5,002
// old entries, more than one chunk of 5,000), and leaves the later ones as they were; the
// newest entry is kept however old, and the next entry's ID follows the last one given.
func testAuditRetention(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	if n := must(s.PruneAudit(ctx, time.Now()))(t); n != 0 {
		t.Fatalf("PruneAudit of an empty log = %d; want 0", n)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cut := t0.Add(time.Hour)
	const old = 5002
	for i := range old {
		// The last old entry is recorded a microsecond before the cut.
		at := t0.Add(time.Duration(i) * time.Millisecond)
		if i == old-1 {
			at = cut.Add(-time.Microsecond)
		}
		must(s.AppendAudit(ctx, store.AuditEntry{Time: at, Action: "results.read", Outcome: "ok", RequestID: fmt.Sprint(i)}))(t)
	}
	kept := []store.AuditEntry{
		must(s.AppendAudit(ctx, store.AuditEntry{Time: cut, Action: "deploy", Scenario: "fraud", Outcome: "ok"}))(t),
		must(s.AppendAudit(ctx, store.AuditEntry{Time: cut.Add(time.Minute), Action: "cancel", Scenario: "fraud", Outcome: "ok"}))(t),
	}
	if n := must(s.PruneAudit(ctx, t0))(t); n != 0 {
		t.Fatalf("PruneAudit before the first entry = %d; want 0", n)
	}
	if n := must(s.PruneAudit(ctx, cut))(t); n != old {
		t.Fatalf("PruneAudit(cut) = %d; want %d", n, old)
	}
	if list := must(s.ListAudit(ctx, store.AuditFilter{}))(t); len(list) != 2 || list[0] != kept[0] || list[1] != kept[1] {
		t.Fatalf("after the prune: %+v; want %+v", list, kept)
	}
	// Everything is older than a time far ahead, but the newest entry is kept.
	if n := must(s.PruneAudit(ctx, cut.Add(24*time.Hour)))(t); n != 1 {
		t.Fatalf("PruneAudit of all = %d; want 1 (the newest kept)", n)
	}
	next := must(s.AppendAudit(ctx, store.AuditEntry{Action: "deploy", Outcome: "ok"}))(t)
	if list := must(s.ListAudit(ctx, store.AuditFilter{}))(t); len(list) != 2 || list[0] != kept[1] || next.ID <= kept[1].ID {
		t.Fatalf("after pruning all: %+v, next ID %d; want the newest (ID %d) and a later ID", list, next.ID, kept[1].ID)
	}
}

// testAuditFold: FoldAudit folds a request into the newest entry of the same identity,
// address, action, scenario, version and outcome recorded at or after since, and appends it
// otherwise; the list shows each entry's repeats and the time of its last.
func testAuditFold(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	read := func(at time.Duration, address, outcome, requestID string) store.AuditEntry {
		return store.AuditEntry{Time: t0.Add(at), Subject: "oidc|anna", Name: "anna@example.com", Address: address,
			Action: "results.read", Scenario: "fraud", Outcome: outcome, RequestID: requestID}
	}
	fold := func(e store.AuditEntry) store.AuditEntry {
		return must(s.FoldAudit(ctx, e, e.Time.Add(-time.Minute)))(t)
	}
	first := fold(read(0, "10.0.0.2", "ok", "r1"))
	if first.ID == 0 || first.Repeats != 0 || first.LastTime != nil || first.RequestID != "r1" {
		t.Fatalf("the first read: %+v; want a new entry without repeats", first)
	}
	again := fold(read(10*time.Second, "10.0.0.2", "ok", "r2"))
	if again.ID != first.ID || again.Repeats != 1 || again.LastTime == nil || !again.LastTime.Equal(t0.Add(10*time.Second)) ||
		!again.Time.Equal(t0) || again.RequestID != "r1" {
		t.Fatalf("the same read 10 s later: %+v; want entry %d with 1 repeat, last at %v, time and request id of the first",
			again, first.ID, t0.Add(10*time.Second))
	}
	otherAddress := fold(read(20*time.Second, "10.0.0.3", "ok", "r3"))
	must(s.AppendAudit(ctx, store.AuditEntry{Time: t0.Add(25 * time.Second), Subject: "oidc|anna", Name: "anna@example.com",
		Address: "10.0.0.2", Action: "deploy", Scenario: "fraud", Version: 2, Outcome: "ok", RequestID: "r4"}))(t)
	fold(read(30*time.Second, "10.0.0.2", "ok", "r5"))                   // into the first, past the others
	refused := fold(read(40*time.Second, "10.0.0.2", "forbidden", "r6")) // another outcome
	fold(read(50*time.Second, "10.0.0.2", "forbidden", "r7"))
	late := fold(read(61*time.Second, "10.0.0.2", "ok", "r8")) // the first is more than a minute older
	fold(read(62*time.Second, "10.0.0.2", "ok", "r9"))
	for _, e := range []store.AuditEntry{otherAddress, refused, late} {
		if e.ID <= first.ID || e.Repeats != 0 {
			t.Fatalf("%+v: want a new entry after %d", e, first.ID)
		}
	}
	list := must(s.ListAudit(ctx, store.AuditFilter{}))(t)
	type row struct {
		request string
		repeats int64
		last    time.Duration // from t0; -1: none
	}
	var got []row
	for _, e := range list {
		r := row{e.RequestID, e.Repeats, -1}
		if e.LastTime != nil {
			r.last = e.LastTime.Sub(t0)
		}
		got = append(got, r)
	}
	want := []row{{"r1", 2, 30 * time.Second}, {"r3", 0, -1}, {"r4", 0, -1}, {"r6", 1, 50 * time.Second}, {"r8", 1, 62 * time.Second}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed (request id, repeats, last) %v; want %v", got, want)
	}

	// Every text field of the fold's key at its longest, incompressible (cut from 1,000 bytes
	// to MaxAuditFieldBytes): the index on the key takes it (PostgreSQL's B-tree refuses an
	// entry past about 2,700 bytes), and the fold finds it.
	rnd := rand.New(rand.NewPCG(25, 6))
	text := func() string {
		b := make([]byte, 1000)
		for i := range b {
			b[i] = byte('!' + rnd.IntN(94))
		}
		return string(b)
	}
	long := store.AuditEntry{Time: t0.Add(2 * time.Hour), Subject: text(), Name: text(), Address: text(), Action: text(),
		Scenario: text(), Version: 7, Outcome: text(), RequestID: "long"}
	firstLong := must(s.FoldAudit(ctx, long, long.Time.Add(-time.Minute)))(t)
	long.Time, long.RequestID = long.Time.Add(time.Second), "long again"
	if again := must(s.FoldAudit(ctx, long, long.Time.Add(-time.Minute)))(t); again.ID != firstLong.ID || again.Repeats != 1 {
		t.Errorf("the longest key folded again: %+v; want entry %d with 1 repeat", again, firstLong.ID)
	}
}
