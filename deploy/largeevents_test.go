package deploy

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The deployments together decode and push at most Config.LargeEventBytes of large events at
// once: three scenarios, each sent four events of 100 KiB, with a budget of 150 KiB, have
// one such event in their graphs at a time (each holds its part 20 ms, and others are seen
// waiting meanwhile), and every event goes through; an event of 200 KiB, larger than the
// budget, goes through alone. Events under LargeEvent take no part.
func TestLargeEventsBounded(t *testing.T) {
	st := sqliteStore(t)
	const budget = 150 << 10
	names := []string{"a", "b", "c"}
	for _, n := range names {
		createScenario(t, st, n, tumblingGraph(""))
	}
	var mu sync.Mutex
	var most, calls, waiting int64
	r := newRuntime(t, st, func(c *Config) { c.LargeEventBytes = budget })
	r.onLargeEvent = func(inUse int64) {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		most, calls, waiting = max(most, inUse), calls+1, max(waiting, r.largeWaiting.Load())
		mu.Unlock()
	}
	event := func(i, size int) []byte {
		head := fmt.Sprintf(`{"ts": %d, "key": "k", "v": 1, "pad": "`, 1_700_000_000_000+int64(i)*1000)
		return []byte(head + strings.Repeat("x", size-len(head)-2) + `"}`)
	}
	for _, n := range names {
		deploy(t, r, n, 0)
	}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			recs := [][]byte{event(0, 100<<10), event(1, 100<<10), event(2, 100<<10), event(3, 100<<10), event(4, 1000)}
			ingestAll(t, r, n, recs, 0, 1)
		})
	}
	wg.Wait()
	for _, n := range names {
		waitCommitted(t, r, n, 5)
	}
	mu.Lock()
	if most != 100<<10 || calls != 12 || waiting == 0 {
		t.Errorf("large events: %d bytes in the graphs at most, %d events, at most %d waiting; want one of 102400 bytes at a time, 12 (not the small ones), and others waiting meanwhile",
			most, calls, waiting)
	}
	mu.Unlock()

	ingestAll(t, r, "a", append(make([][]byte, 5), event(5, 200<<10)), 5, 1) // key b5
	waitCommitted(t, r, "a", 6)
	mu.Lock()
	defer mu.Unlock()
	if most != budget || calls != 13 {
		t.Errorf("an event of 200 KiB: %d bytes at most, %d events; want all of the budget, %d, and 13", most, calls, budget)
	}
}

// The wait for the large-event budget is not the event's time: six scenarios each sent one
// event of 100 KiB, with a budget of 150 KiB (one at a time) held 150 ms by each and an event
// timeout of 400 ms, all go through, none abandoned, though the last waits about 750 ms (a
// review found 3 of 6 dead-lettered as "went on for more than" the timeout).
func TestLargeEventWaitIsNotTheEventsTime(t *testing.T) {
	st := sqliteStore(t)
	names := []string{"a", "b", "c", "d", "e", "f"}
	for _, n := range names {
		createScenario(t, st, n, tumblingGraph(""))
	}
	r := newRuntime(t, st, func(c *Config) { c.LargeEventBytes, c.EventTimeout = 150<<10, 400*time.Millisecond })
	var mu sync.Mutex
	calls := 0
	r.onLargeEvent = func(int64) {
		mu.Lock()
		calls++
		mu.Unlock()
		time.Sleep(150 * time.Millisecond)
	}
	for _, n := range names {
		deploy(t, r, n, 0)
	}
	head := `{"ts": 1700000000000, "key": "k", "v": 1, "pad": "`
	event := []byte(head + strings.Repeat("x", 100<<10-len(head)-2) + `"}`)
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() { ingestAll(t, r, n, [][]byte{event}, 0, 1) })
	}
	wg.Wait()
	for _, n := range names {
		waitCommitted(t, r, n, 1)
		if dls := readDeadLetters(t, st, n); len(dls) != 0 {
			t.Errorf("%s: %d dead letters, the first at %s: %s; want none", n, len(dls), dls[0].NodeID, dls[0].Message)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 6 {
		t.Errorf("%d large events went through, want 6", calls)
	}
}

// A deployment stopped while its event waits for the budget does not push it (pushed
// without the budget, the events of every deployment waiting at a shutdown would decode at
// once): "hold" takes the budget (150 KiB) with an event of 100 KiB and keeps it; "wait"'s
// event of 120 KiB waits; "wait" is cancelled meanwhile and its event never goes through;
// deployed again once "hold" has let go, it reads the event again from its log and it goes
// through then, once.
func TestLargeEventNotPushedWhenStoppedWaiting(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "hold", tumblingGraph(""))
	createScenario(t, st, "wait", tumblingGraph(""))
	r := newRuntime(t, st, func(c *Config) { c.LargeEventBytes = 150 << 10 })
	var mu sync.Mutex
	var seen []int64
	holding, letGo := make(chan struct{}), make(chan struct{})
	r.onLargeEvent = func(inUse int64) {
		mu.Lock()
		seen = append(seen, inUse)
		mu.Unlock()
		if inUse == 100<<10 {
			close(holding)
			<-letGo
		}
	}
	event := func(size int) []byte {
		head := `{"ts": 1700000000000, "key": "k", "v": 1, "pad": "`
		return []byte(head + strings.Repeat("x", size-len(head)-2) + `"}`)
	}
	deploy(t, r, "hold", 0)
	deploy(t, r, "wait", 0)
	ingestAll(t, r, "hold", [][]byte{event(100 << 10)}, 0, 1)
	<-holding
	ingestAll(t, r, "wait", [][]byte{event(120 << 10)}, 0, 1)
	waitFor(t, "wait's event waiting for the budget", func() bool { return r.largeWaiting.Load() == 1 })
	if _, err := r.Cancel(t.Context(), "wait", "test", "stop while waiting"); err != nil {
		t.Fatal(err)
	}
	close(letGo)
	waitCommitted(t, r, "hold", 1)
	mu.Lock()
	if len(seen) != 1 {
		t.Errorf("large events %v after the cancel; want hold's alone (102400)", seen)
	}
	mu.Unlock()
	deploy(t, r, "wait", 0)
	waitCommitted(t, r, "wait", 1)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[1] != 120<<10 {
		t.Errorf("large events %v; want hold's, then wait's once (122880) when deployed again", seen)
	}
}
