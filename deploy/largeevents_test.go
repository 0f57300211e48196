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
// one such event in their graphs at a time (each holds its part 20 ms, so that the others
// come to it meanwhile), and every event goes through; an event of 200 KiB, larger than the
// budget, goes through alone. Events under LargeEvent take no part.
func TestLargeEventsBounded(t *testing.T) {
	st := sqliteStore(t)
	const budget = 150 << 10
	names := []string{"a", "b", "c"}
	for _, n := range names {
		createScenario(t, st, n, tumblingGraph(""))
	}
	var mu sync.Mutex
	var most, calls int64
	r := newRuntime(t, st, func(c *Config) { c.LargeEventBytes = budget })
	r.onLargeEvent = func(inUse int64) {
		mu.Lock()
		most, calls = max(most, inUse), calls+1
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
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
	if most != 100<<10 || calls != 12 {
		t.Errorf("large events: %d bytes in the graphs at most, %d events; want one of 102400 bytes at a time, 12 (not the small ones)", most, calls)
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
