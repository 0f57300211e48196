package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// stuckWriter is a standard output that nobody reads (a terminal on hold, a full pipe): a
// write blocks until release closes, whatever the context.
type stuckWriter struct {
	entered chan struct{} // closed at the first write
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	got     []byte
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{entered: make(chan struct{}), release: make(chan struct{})}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, p...)
	return len(p), nil
}

const stdoutSink = `{"typ": "stdout", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], n: #agg.n}"}}]}`

// A deployment blocked in a write that no stop interrupts (a stdout sink's standard output
// that nobody reads) does not hold its cancel, a new deploy of its scenario or the server's
// shutdown for ever: each waits Config.StopWait, then the cancel fences the deployment off
// (its lease ends: nothing it commits afterwards counts) and answers; a deploy of the scenario
// is refused while the old run has not returned, and served once it has; a shutdown gives up
// with an error naming the deployment.
func TestStuckDeploymentDoesNotHoldItsCancel(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "s", tumblingGraph(stdoutSink))
	createScenario(t, st, "other", tumblingGraph(""))
	w := newStuckWriter()
	r := newRuntime(t, st, func(c *Config) { c.Stdout = w; c.StopWait = 500 * time.Millisecond })
	first := deploy(t, r, "s", 0)
	deploy(t, r, "other", 0)
	// Events 20 s apart: each closes the window before it, whose result goes to stdout.
	ingestAll(t, r, "s", [][]byte{[]byte(`{"ts": 0, "key": "a", "v": 1}`), []byte(`{"ts": 20000, "key": "a", "v": 1}`)}, 0, 2)
	select {
	case <-w.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the stdout sink never wrote")
	}

	canceled := make(chan error, 1)
	var got store.Deployment
	go func() {
		// The client gives up before the stop's wait ends: the cancel is recorded anyway (a
		// review found it left RUNNING, not fenced, with the request's context canceled).
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		var err error
		got, err = r.Cancel(ctx, "s", "ann", "stuck")
		canceled <- err
	}()
	select {
	case err := <-canceled:
		if err != nil {
			t.Fatalf("cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		close(w.release)
		t.Fatal("cancel still waiting after 30 s for a deployment blocked in a write")
	}
	if got.ID != first.ID || got.Status != store.StatusCanceled {
		t.Errorf("cancel answered %d %s, want %d CANCELED", got.ID, got.Status, first.ID)
	}
	if d, err := st.GetDeployment(t.Context(), first.ID); err != nil || d.Status != store.StatusCanceled || !strings.Contains(d.Reason, "fenced off") {
		t.Errorf("the store has it %s %q (%v), want CANCELED, fenced off", d.Status, d.Reason, err)
	}
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "s"}); !errors.Is(err, ErrStillStopping) {
		t.Errorf("a deploy while the old run is blocked: %v, want ErrStillStopping", err)
	} else if !strings.Contains(err.Error(), "has not stopped") {
		t.Errorf("message %q", err)
	}
	// The other scenario goes on.
	ingestAll(t, r, "other", records(40), 0, 40)
	waitCommitted(t, r, "other", 40)

	close(w.release)
	// The old run returns: what it wrote is written, its checkpoint is refused (the lease
	// ended with the cancel), and the scenario deploys again.
	waitFor(t, "a deploy served once the old run returned", func() bool {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "s"})
		return err == nil
	})
	if d, err := st.GetDeployment(t.Context(), first.ID); err != nil || d.Status != store.StatusCanceled {
		t.Errorf("the first deployment is %s (%v), want CANCELED", d.Status, err)
	}
}

// A shutdown gives up on a deployment blocked in a write once its context ends, with an
// error naming it, instead of waiting for the write.
func TestShutdownGivesUpOnAStuckDeployment(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "s", tumblingGraph(stdoutSink))
	w := newStuckWriter()
	defer close(w.release)
	r, err := New(Config{Store: st, CheckpointInterval: 20 * time.Millisecond, FileSinkDir: t.TempDir(), CrashLoopLimit: -1, Stdout: w, StopWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "s", 0)
	ingestAll(t, r, "s", [][]byte{[]byte(`{"ts": 0, "key": "a", "v": 1}`), []byte(`{"ts": 20000, "key": "a", "v": 1}`)}, 0, 2)
	<-w.entered
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `"s"`) {
			t.Errorf("shutdown: %v, want an error naming the deployment of \"s\"", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown still waiting after 30 s for a deployment blocked in a write")
	}
}

// cancelRefusingStore refuses to record a cancel while full is set, as a full disk does.
type cancelRefusingStore struct {
	store.Store
	full atomic.Bool
}

func (s *cancelRefusingStore) SetDeploymentStatus(ctx context.Context, id int64, to store.DeploymentStatus, reason string) (store.Deployment, error) {
	if to == store.StatusCanceled && s.full.Load() {
		return store.Deployment{}, fmt.Errorf("setting the status: %w: database or disk is full (13)", store.ErrStoreFull)
	}
	return s.Store.SetDeploymentStatus(ctx, id, to, reason)
}

// A cancel the store cannot record (its disk is full) says so: the deployment stopped here,
// the store still lists it RUNNING (hostile round: the answer said nothing was written and
// the log said "canceled"); sent again once the store takes writes, it is recorded.
func TestCancelNotRecordedSaysSo(t *testing.T) {
	st := &cancelRefusingStore{Store: sqliteStore(t)}
	createScenario(t, st, "c", tumblingGraph(""))
	r := newRuntime(t, st)
	d := deploy(t, r, "c", 0)
	st.full.Store(true)
	_, err := r.Cancel(t.Context(), "c", "ann", "")
	var nr *CancelNotRecordedError
	if !errors.As(err, &nr) || nr.Deployment != d.ID || !errors.Is(err, store.ErrStoreFull) {
		t.Fatalf("cancel on a full store: %v, want a *CancelNotRecordedError of deployment %d wrapping ErrStoreFull", err, d.ID)
	}
	if got, _ := st.GetDeployment(t.Context(), d.ID); got.Status != store.StatusRunning {
		t.Errorf("the store lists it %s, want RUNNING (nothing recorded)", got.Status)
	}
	st.full.Store(false)
	got, err := r.Cancel(t.Context(), "c", "ann", "again")
	if err != nil || got.Status != store.StatusCanceled {
		t.Errorf("the cancel sent again: %+v, %v; want CANCELED", got, err)
	}
}

// slowCreateStore holds CreateDeployment until release closes, once hold is set.
type slowCreateStore struct {
	store.Store
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *slowCreateStore) CreateDeployment(ctx context.Context, d store.NewDeployment) (store.Deployment, error) {
	if s.hold.Load() {
		close(s.entered)
		<-s.release
	}
	return s.Store.CreateDeployment(ctx, d)
}

// Between a redeploy's stop of the running deployment and the start of the new one, events
// are answered ErrDeploying (503, retry in a second), not ErrNotDeployed (409 "deploy it
// first", which a client need not retry: hostile round, seen during redeploys); once the
// new one runs they are taken.
func TestIngestDuringARedeploy(t *testing.T) {
	st := &slowCreateStore{Store: sqliteStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	createScenario(t, st, "r", tumblingGraph(""))
	r := newRuntime(t, st)
	deploy(t, r, "r", 0)
	st.hold.Store(true)
	deployed := make(chan error, 1)
	go func() {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "r"})
		deployed <- err
	}()
	<-st.entered // the old deployment is stopped; the new one is being created
	batch := [][]byte{[]byte(`{"ts": 1, "key": "a", "v": 1}`)}
	if _, err := r.Ingest(t.Context(), "r", "in", "k1", batch); !errors.Is(err, ErrDeploying) {
		t.Errorf("ingest during the redeploy: %v, want ErrDeploying", err)
	}
	st.hold.Store(false)
	close(st.release)
	if err := <-deployed; err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ingest(t.Context(), "r", "in", "k1", batch); err != nil {
		t.Errorf("ingest after the redeploy: %v", err)
	}
}
