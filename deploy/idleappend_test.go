package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// heldAppends is a store whose next event append, once armed, waits until released (as a
// commit stalled on a slow disk): held is closed when it waits.
type heldAppends struct {
	store.Store
	armed          chan struct{} // receive: hold this append
	held, released chan struct{}
}

func (h *heldAppends) AppendEventBatch(ctx context.Context, log store.EventLog, key string, payloads [][]byte) (store.EventBatch, error) {
	select {
	case <-h.armed:
		close(h.held)
		<-h.released
	default:
	}
	return h.Store.AppendEventBatch(ctx, log, key, payloads)
}

// An idle step waits for the appends in progress (found by review): a source whose only
// batch being appended stalls longer than its idle timeout does not let the watermark pass
// it. Worked by hand: a 1 s tumbling window, no disorder allowed, a 1 s idle timeout; event A
// at t (the base, a whole second) is processed; event B at t + 100 ms is appended while the
// append stalls for 2.5 s. An idle step then would move the watermark to t + 1.5 s and close
// [t, t + 1 s), B's window: B late. Waiting, B counts in it: the window counts 2 once an
// event at t + 5 s closes it.
func TestIdleStepWaitsForAppends(t *testing.T) {
	st := &heldAppends{Store: sqliteStore(t), armed: make(chan struct{}, 1), held: make(chan struct{}), released: make(chan struct{})}
	graph := replaceOnce(t, tumblingGraph(""), `{"name": "maxOutOfOrderness", "value": "2s"}`,
		`{"name": "maxOutOfOrderness", "value": "0s"}, {"name": "idleTimeout", "value": "1s"}`)
	graph = replaceOnce(t, graph, `{"name": "windowLength", "value": "10s"}`, `{"name": "windowLength", "value": "1s"}`)
	createScenario(t, st, "held", graph)
	r := newRuntime(t, st)
	deploy(t, r, "held", 0)
	const base = int64(1_700_000_000_000)
	ingest := func(ms int64) error {
		_, err := r.Ingest(context.Background(), "held", "in", "", [][]byte{fmt.Appendf(nil, `{"ts": %d, "key": "k", "v": 1}`, base+ms)})
		return err
	}
	if err := ingest(0); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, r, "held", 1)
	st.armed <- struct{}{}
	done := make(chan error, 1)
	go func() { done <- ingest(100) }()
	<-st.held
	time.Sleep(2500 * time.Millisecond) // the append stalled for 2.5 idle timeouts
	close(st.released)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ingest(5000); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the window [t, t + 1 s) emitted", func() bool { return len(collected(t, st, "held")) > 0 })
	l, _ := r.Live("held")
	want := fmt.Sprintf(`{"key":"k","start":%d,"n":2,"sum":2}`, base)
	if got := collected(t, st, "held"); l.Nodes["win"].Late != 0 || len(got) != 1 || got[0] != want {
		t.Errorf("%d late, results %v; want none late, %s", l.Nodes["win"].Late, got, want)
	}
}
