package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// One group with every case at once, in one transaction: new batches on two logs, a batch
// whose key an earlier batch of the same group holds (the same events: a duplicate; others: a
// reused key), a key stored before the group, an unknown scenario. Offsets, answers and the
// stored events are worked out by hand from the arrival order.
func TestCommitAppendsGroup(t *testing.T) {
	s := openSchema(t, "")
	ctx := t.Context()
	for _, name := range []string{"alpha", "beta"} {
		if _, err := s.CreateScenario(ctx, name, store.Draft{Graph: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	a := store.EventLog{Scenario: "alpha", Source: "in"}
	b := store.EventLog{Scenario: "beta", Source: "in"}
	ev := func(names ...string) [][]byte {
		var out [][]byte
		for _, n := range names {
			out = append(out, []byte(fmt.Sprintf(`{"e":%q}`, n)))
		}
		return out
	}
	before, err := s.AppendEventBatch(ctx, a, "k0", ev("p0", "p1")) // offsets 0-1 of alpha
	if err != nil {
		t.Fatal(err)
	}

	reqs := []check.Append{
		{Log: a, Key: "k1", Payloads: ev("a1", "a2")},                    // 0: alpha 2-3
		{Log: b, Payloads: ev("b1")},                                     // 1: beta 0
		{Log: a, Key: "k1", Payloads: ev("a1", "a2")},                    // 2: duplicate of 0
		{Log: a, Key: "k1", Payloads: ev("x1", "x2")},                    // 3: key reused
		{Log: store.EventLog{Scenario: "ghost", Source: "in"}, Key: "g"}, // 4: no such scenario
		{Log: a, Key: "k2", Payloads: ev("a3", "a4", "a5")},              // 5: alpha 4-6
		{Log: a, Key: "k0", Payloads: ev("p0", "p1")},                    // 6: duplicate of before
		{Log: a, Payloads: ev("a6")},                                     // 7: alpha 7
	}
	reqs[4].Payloads = ev("g1")
	calls := make([]*appendCall, len(reqs))
	for i, r := range reqs {
		r.Ctx = context.Background()
		calls[i] = &appendCall{Req: r}
	}
	if err := s.commitAppends(calls); err != nil {
		t.Fatal(err)
	}
	at := calls[0].Res.AcceptedAt
	if at.IsZero() || at.Before(before.AcceptedAt) {
		t.Fatalf("group accepted at %v, before the earlier batch (%v)", at, before.AcceptedAt)
	}
	want := []struct {
		first int64
		dup   bool
		err   error
	}{{2, false, nil}, {0, false, nil}, {2, true, nil}, {0, false, store.ErrBatchKeyReused},
		{0, false, store.ErrNotFound}, {4, false, nil}, {0, true, nil}, {7, false, nil}}
	for i, c := range calls {
		w := want[i]
		if w.err != nil {
			if !errors.Is(c.Err, w.err) {
				t.Errorf("call %d: error %v, want %v", i, c.Err, w.err)
			}
			continue
		}
		wantAt := at
		if i == 6 {
			wantAt = before.AcceptedAt
		}
		if c.Err != nil || c.Res.FirstOffset != w.first || c.Res.Duplicate != w.dup ||
			c.Res.Count != len(reqs[i].Payloads) || !c.Res.AcceptedAt.Equal(wantAt) {
			t.Errorf("call %d: %+v, %v; want first offset %d, duplicate %v, count %d, accepted at %v",
				i, c.Res, c.Err, w.first, w.dup, len(reqs[i].Payloads), wantAt)
		}
	}

	read := func(log store.EventLog) string {
		t.Helper()
		events, err := s.ReadEvents(ctx, log, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, e := range events {
			out += fmt.Sprintf("%d%s ", e.Offset, e.Payload)
		}
		return out
	}
	if got, want := read(a), `0{"e":"p0"} 1{"e":"p1"} 2{"e":"a1"} 3{"e":"a2"} 4{"e":"a3"} 5{"e":"a4"} 6{"e":"a5"} 7{"e":"a6"} `; got != want {
		t.Errorf("alpha holds %s\nwant %s", got, want)
	}
	if got, want := read(b), `0{"e":"b1"} `; got != want {
		t.Errorf("beta holds %s\nwant %s", got, want)
	}
	if _, err := s.ReadEvents(ctx, store.EventLog{Scenario: "ghost", Source: "in"}, 0, 100); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reading the unknown scenario's log: %v, want ErrNotFound", err)
	}
	// The group's keys and next offsets were stored: a later group sees them.
	again, err := s.AppendEventBatch(ctx, a, "k2", ev("a3", "a4", "a5"))
	if err != nil || !again.Duplicate || again.FirstOffset != 4 || !again.AcceptedAt.Equal(at) {
		t.Errorf("k2 re-sent after the group: %+v, %v; want the duplicate of offset 4 accepted at %v", again, err, at)
	}
	next, err := s.AppendEventBatch(ctx, a, "k3", ev("a7"))
	if err != nil || next.Duplicate || next.FirstOffset != 8 {
		t.Errorf("k3 after the group: %+v, %v; want first offset 8", next, err)
	}
}

// A group whose transaction fails half-way (here a chunk at an offset a stray row holds)
// answers every call with the failure and stores nothing of it: no chunk, no key, no offset;
// and the connection it ran on is usable afterwards (the pool has one).
func TestCommitAppendsGroupFails(t *testing.T) {
	s := openSchema(t, "&pool_max_conns=1")
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "alpha", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	a := store.EventLog{Scenario: "alpha", Source: "in"}
	if _, err := s.AppendEventBatch(ctx, a, "k0", [][]byte{[]byte(`{"e":0}`)}); err != nil { // offset 0
		t.Fatal(err)
	}
	// A stray chunk ending at offset 2, where the group's second batch ends (1-2).
	if _, err := s.pool.Exec(ctx, `INSERT INTO event_chunks (scenario_id, source, last_offset, event_count, payloads, accepted_at)
		SELECT id, 'in', 2, 1, '\x00'::bytea, now() FROM scenarios WHERE name = 'alpha'`); err != nil {
		t.Fatal(err)
	}
	calls := []*appendCall{
		{Req: check.Append{Ctx: ctx, Log: a, Key: "k0", Payloads: [][]byte{[]byte(`{"e":0}`)}}}, // duplicate
		{Req: check.Append{Ctx: ctx, Log: a, Key: "k1", Payloads: [][]byte{[]byte(`{"e":1}`), []byte(`{"e":2}`)}}},
	}
	if err := s.commitAppends(calls); err == nil || !isUnique(err, "event_chunks_pkey") {
		t.Fatalf("commitAppends = %v, want the unique violation of event_chunks_pkey", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM event_chunks WHERE last_offset = 2`); err != nil {
		t.Fatal(err) // also: the one connection is not left in a failed transaction
	}
	// Nothing of the group stayed: k1 is new, at offset 1.
	b, err := s.AppendEventBatch(ctx, a, "k1", [][]byte{[]byte(`{"e":1}`), []byte(`{"e":2}`)})
	if err != nil || b.Duplicate || b.FirstOffset != 1 {
		t.Errorf("k1 after the failed group: %+v, %v; want a new batch at offset 1", b, err)
	}
}

// openSchema opens a Store on a schema of its own in the test database (pgtest.Schema), its
// URL followed by params, closed when the test ends.
func openSchema(t *testing.T, params string) *Store {
	t.Helper()
	_, schemaURL := pgtest.Schema(t)
	s, err := Open(t.Context(), schemaURL+params)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
