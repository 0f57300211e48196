package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// ambiguousCommits commits a checkpoint with results once armed and then answers an error,
// as when the connection drops after COMMIT reached the database.
type ambiguousCommits struct {
	store.Store
	armed atomic.Bool
}

func (a *ambiguousCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	cp, ids, err := a.Store.CommitCheckpoint(ctx, c, results)
	if err == nil && len(results) > 0 && a.armed.CompareAndSwap(true, false) {
		return store.Checkpoint{}, nil, errInjected
	}
	return cp, ids, err
}

// A checkpoint committed although the store answered an error is taken as committed (its
// state and positions are the store's latest): its results are not committed a second time,
// and the collected results equal a replay of the input (a review found 305 results of 284).
func TestAmbiguousCommitStoresResultsOnce(t *testing.T) {
	st := &ambiguousCommits{Store: sqliteStore(t)}
	graph := tumblingGraph("")
	recs := sumsAroundFault(t, st, graph, &st.armed)
	if st.armed.Load() {
		t.Fatal("no checkpoint with results was committed after arming")
	}
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
}

// sumsAroundFault runs graph, as scenario "sums" on st, over 3000 records, arming st's fault
// once the first 1000 are committed, and returns the records once all are committed.
func sumsAroundFault(t *testing.T, st store.Store, graph string, armed *atomic.Bool) [][]byte {
	t.Helper()
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st)
	deploy(t, r, "sums", 0)
	recs := records(3000)
	ingestAll(t, r, "sums", recs[:1000], 0, 250)
	waitCommitted(t, r, "sums", 1000)
	armed.Store(true)
	ingestAll(t, r, "sums", recs, 1000, 250)
	waitCommitted(t, r, "sums", int64(len(recs)))
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	return recs
}

// window is one tumbling window of tumblingGraph, worked out from the input alone.
type window struct {
	Key   string
	Start int64
	N     int64
	Sum   float64
}

// windowOracle is, by brute force, every window of tumblingGraph (10 s, by key, count and sum
// of v) that the watermark after all of recs closes (the largest ts less 2 s reaches its end),
// for records made by records (ts, key, v), in no order.
func windowOracle(t *testing.T, recs [][]byte) map[window]int {
	t.Helper()
	type id struct {
		key   string
		start int64
	}
	acc := map[id]*window{}
	maxTS := int64(math.MinInt64)
	for _, r := range recs {
		var e struct {
			TS  int64   `json:"ts"`
			Key string  `json:"key"`
			V   float64 `json:"v"`
		}
		if err := json.Unmarshal(r, &e); err != nil {
			t.Fatal(err)
		}
		maxTS = max(maxTS, e.TS)
		k := id{e.Key, e.TS - e.TS%10_000}
		if acc[k] == nil {
			acc[k] = &window{Key: k.key, Start: k.start}
		}
		acc[k].N++
		acc[k].Sum += e.V
	}
	out := map[window]int{}
	for _, w := range acc {
		if maxTS-2000 >= w.Start+10_000 {
			out[*w]++
		}
	}
	return out
}

// equalWindows fails t unless got holds each window of want exactly once, and nothing else.
func equalWindows(t *testing.T, what string, got, want map[window]int) {
	t.Helper()
	total := 0
	for w, n := range got {
		total += n
		if n != want[w] {
			t.Errorf("%s: window %+v stored %d times, want %d", what, w, n, want[w])
		}
	}
	for w, n := range want {
		if got[w] == 0 {
			t.Errorf("%s: window %+v missing (want %d)", what, w, n)
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s: the oracle closes no window: the test tests nothing", what)
	}
	t.Logf("%s: %d results, %d windows expected", what, total, len(want))
}

// collectedWindows is the collected results of the scenario, as windows.
func collectedWindows(t *testing.T, st store.Store, name string) map[window]int {
	t.Helper()
	out := map[window]int{}
	for _, s := range collected(t, st, name) {
		var w window
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			t.Fatal(err)
		}
		out[w]++
	}
	return out
}

// unclearCommits is a store whose first commit of a checkpoint with results, once armed,
// answers an error although it is, or will be, committed. mode says how the deployment's
// read back of the latest checkpoint goes then:
//   - readFails: the commit is made, and the next GetLatestCheckpoint fails;
//   - readEarly: the commit is held, as by a database still writing it when the client's
//     connection dropped: the next GetLatestCheckpoint reads the store before it lands, and
//     the next CommitCheckpoint lands it before its own commit.
//
// or it is not committed at all:
//   - notCommitted: and the next commits go through;
//   - fenceUnclear: and the next commit without results (the deployment's fence) is
//     committed but answered with an error too.
type unclearCommits struct {
	store.Store
	mode  int
	armed atomic.Bool
	fence atomic.Bool
	// hooked counts the injected steps: the error answered, then the read failed or the held
	// commit landed.
	hooked   atomic.Int32
	mu       sync.Mutex
	failRead bool
	held     func()
}

const (
	readFails = iota
	readEarly
	notCommitted
	fenceUnclear
)

func (u *unclearCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	u.landHeld()
	if len(results) == 0 && u.fence.CompareAndSwap(true, false) {
		if _, _, err := u.Store.CommitCheckpoint(ctx, c, results); err != nil {
			return store.Checkpoint{}, nil, err
		}
		u.hooked.Add(1)
		return store.Checkpoint{}, nil, errInjected
	}
	if len(results) == 0 || !u.armed.CompareAndSwap(true, false) {
		return u.Store.CommitCheckpoint(ctx, c, results)
	}
	u.hooked.Add(1)
	switch u.mode {
	case notCommitted:
		return store.Checkpoint{}, nil, errInjected
	case fenceUnclear:
		u.fence.Store(true)
		return store.Checkpoint{}, nil, errInjected
	}
	if u.mode == readEarly {
		results = slices.Clone(results)
		u.mu.Lock()
		u.held = func() {
			if _, _, err := u.Store.CommitCheckpoint(context.Background(), c, results); err != nil {
				panic(fmt.Sprintf("the held commit failed: %v", err))
			}
		}
		u.mu.Unlock()
		return store.Checkpoint{}, nil, errInjected
	}
	if _, _, err := u.Store.CommitCheckpoint(ctx, c, results); err != nil {
		return store.Checkpoint{}, nil, err
	}
	u.mu.Lock()
	u.failRead = true
	u.mu.Unlock()
	return store.Checkpoint{}, nil, errInjected
}

func (u *unclearCommits) GetLatestCheckpoint(ctx context.Context, deployment int64) (store.Checkpoint, error) {
	u.mu.Lock()
	fail := u.failRead
	u.failRead = false
	u.mu.Unlock()
	if fail {
		u.hooked.Add(1)
		return store.Checkpoint{}, errInjected
	}
	cp, err := u.Store.GetLatestCheckpoint(ctx, deployment)
	u.landHeld()
	return cp, err
}

// landHeld makes the held commit, if any.
func (u *unclearCommits) landHeld() {
	u.mu.Lock()
	held := u.held
	u.held = nil
	u.mu.Unlock()
	if held != nil {
		held()
		u.hooked.Add(1)
	}
}

// A checkpoint committed although the store answered an error, whose read back then fails or
// comes before the commit is visible, is still committed once: the collected results are
// each window of the input once (a review stored 473 results where 284 are right). So is one
// that was not committed, whose results go with a later checkpoint, also when the fence that
// decides it is itself committed with an error.
func TestAmbiguousCommitUnclearReadBack(t *testing.T) {
	for name, mode := range map[string]int{"ReadFails": readFails, "ReadBeforeCommitVisible": readEarly,
		"NotCommitted": notCommitted, "FenceUnclear": fenceUnclear} {
		for storeName, newStore := range map[string]newStoreFunc{"SQLite": sqliteStore, "Postgres": postgresStore} {
			t.Run(name+"On"+storeName, func(t *testing.T) {
				t.Parallel()
				testUnclearReadBack(t, &unclearCommits{Store: newStore(t), mode: mode})
			})
		}
	}
}

func testUnclearReadBack(t *testing.T, st *unclearCommits) {
	graph := tumblingGraph("")
	recs := sumsAroundFault(t, st, graph, &st.armed)
	want := map[int]int32{readFails: 2, readEarly: 2, notCommitted: 1, fenceUnclear: 2}[st.mode]
	if h := st.hooked.Load(); h != want {
		t.Fatalf("%d injected steps happened, want %d: the test did not test what it says", h, want)
	}
	equalWindows(t, "collected", collectedWindows(t, st, "sums"), windowOracle(t, recs))
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
}

// unclearKafkaCommit is a store whose first commit of a checkpoint with a Kafka transaction,
// once armed, is committed but answered with an error; the next read of the latest
// checkpoint fails, and the next call after that (a commit or a read) hangs until the runtime
// is aborted (hanging is closed then): the server dies with the checkpoint's fate unclear to
// it.
type unclearKafkaCommit struct {
	store.Store
	armed, failRead, hang atomic.Bool
	hanging               chan struct{}
}

// hung hangs until ctx ends when the store is set to hang, and returns ctx's error then.
func (u *unclearKafkaCommit) hung(ctx context.Context) error {
	if u.failRead.Load() || !u.hang.CompareAndSwap(true, false) {
		return nil
	}
	close(u.hanging)
	<-ctx.Done()
	return ctx.Err()
}

func (u *unclearKafkaCommit) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if err := u.hung(ctx); err != nil {
		return store.Checkpoint{}, nil, err
	}
	state, err := decodeState(c.State)
	if err != nil || len(state.outputs) == 0 || !u.armed.CompareAndSwap(true, false) {
		return u.Store.CommitCheckpoint(ctx, c, results)
	}
	if _, _, err := u.Store.CommitCheckpoint(ctx, c, results); err != nil {
		return store.Checkpoint{}, nil, err
	}
	u.failRead.Store(true)
	u.hang.Store(true)
	return store.Checkpoint{}, nil, errInjected
}

func (u *unclearKafkaCommit) GetLatestCheckpoint(ctx context.Context, deployment int64) (store.Checkpoint, error) {
	if u.failRead.CompareAndSwap(true, false) {
		return store.Checkpoint{}, errInjected
	}
	if err := u.hung(ctx); err != nil {
		return store.Checkpoint{}, err
	}
	return u.Store.GetLatestCheckpoint(ctx, deployment)
}

// A Kafka sink's checkpoint committed although the store answered an error, which the
// deployment cannot confirm before the server dies: its transaction is not aborted, so the
// restart commits it from the checkpoint's record, and a read_committed consumer sees each
// window of the input exactly once.
func TestAmbiguousCommitKafkaSink(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	u := &unclearKafkaCommit{Store: st, hanging: make(chan struct{})}
	brokers, recs := kafkaSinkCrash(t, st, u, &u.armed, u.hanging, nil)
	got := map[window]int{}
	for _, rec := range consumeAll(t, brokers, "decisions", kgo.ReadCommitted()) {
		w := window{Key: string(rec.Key)}
		if err := json.Unmarshal(rec.Value, &w); err != nil {
			t.Fatal(err)
		}
		got[w]++
	}
	equalWindows(t, "read_committed", got, windowOracle(t, recs))
	equalResults(t, committedOutput(t, brokers, "decisions"), kafkaOracle(t, recs))
}

// lostCommits answers the first commit with results after being armed with an error without
// sending it to the store (the connection dropped before COMMIT), and calls onLost first.
type lostCommits struct {
	store.Store
	armed  atomic.Bool
	lost   chan struct{}
	onLost func()
}

func (s *lostCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if len(results) > 0 && s.armed.CompareAndSwap(true, false) {
		s.onLost()
		close(s.lost)
		return store.Checkpoint{}, nil, errInjected
	}
	return s.Store.CommitCheckpoint(ctx, c, results)
}

// A checkpoint in doubt whose transaction PostgreSQL still holds open (a dropped client's
// backend not gone yet: here another connection holding the checkpoint row): the fence waits
// on the row at most fenceTimeout, so the deployment's loop goes on and can be cancelled at
// once (a reviewer's finding: the loop waited as long as the row was held, and Cancel until
// the final checkpoint's own bound).
func TestFenceWaitIsBounded(t *testing.T) {
	old := fenceTimeout
	fenceTimeout = 300 * time.Millisecond
	defer func() { fenceTimeout = old }()
	_, url := pgtest.Schema(t)
	st, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	s := &lostCommits{Store: st, lost: make(chan struct{})}
	createScenario(t, st, "sums", tumblingGraph(""))
	r := newRuntime(t, s)
	d := deploy(t, r, "sums", 0)
	recs := records(2000)
	ingestAll(t, r, "sums", recs[:1000], 0, 250)
	waitCommitted(t, r, "sums", 1000)
	s.onLost = func() {
		if _, err := tx.Exec(context.Background(), `SELECT 1 FROM checkpoints WHERE deployment_id = $1 FOR UPDATE`, d.ID); err != nil {
			panic(err)
		}
	}
	s.armed.Store(true)
	ingestAll(t, r, "sums", recs, 1000, 250)
	<-s.lost
	// Wait until the fence waits on the row (its upsert, in pg_stat_activity).
	probe, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(context.Background())
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int
		if err := probe.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO checkpoints%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no commit waits on the checkpoint row after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Cancel(context.Background(), "sums", "ann", "stop")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cancel while the checkpoint row is held: %v", err)
		}
	case <-time.After(5 * time.Second):
		// fenceTimeout is 300 ms here. Without it the fence waits on the row until the
		// stop's final checkpoint gives up (finalCheckpointTimeout, 10 s), the loop stuck
		// meanwhile.
		t.Error("Cancel has not returned after 5 s while the checkpoint row is held")
		tx.Rollback(context.Background())
		<-done
	}
}
