package api

import (
	"context"
	"testing"
	"time"
)

// turnsBudget is a request budget of size bytes whose requests wait up to a minute.
func turnsBudget(size int64) *bodyBudget {
	bb := newBodyBudget(size, errRequestsBusy, "--request-body-bytes")
	bb.wait, bb.queue = time.Minute, map[string][]*budgetWaiter{}
	return bb
}

// mustHold takes n bytes for a new request of client at once, failing t when they are not free.
func (bb *bodyBudget) mustHold(t *testing.T, client string, n int64) *requestHold {
	t.Helper()
	h := &requestHold{budget: bb, client: client, ctx: context.Background()}
	if _, err := h.take(n, holdLoad); err != nil {
		t.Fatalf("%s's %d bytes: %v", client, n, err)
	}
	return h
}

// startWaiting starts a new request of client asking for n bytes, and returns once it waits;
// name is sent on granted when they are granted.
func (bb *bodyBudget) startWaiting(t *testing.T, name, client string, n int64, granted chan<- string) {
	t.Helper()
	h := &requestHold{budget: bb, client: client, ctx: context.Background()}
	go func() {
		if _, err := h.take(n, holdLoad); err == nil {
			granted <- name
		}
	}()
	for {
		bb.mu.Lock()
		q := len(bb.queue[client])
		bb.mu.Unlock()
		if q > 0 && bb.queued(h) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// queued reports whether the request of h waits (test helper).
func (bb *bodyBudget) queued(h *requestHold) bool {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	for _, w := range bb.queue[h.client] {
		if w.hold == h {
			return true
		}
	}
	return false
}

// grants receives n grants, in any order.
func grants(t *testing.T, ch <-chan string, n int) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for range n {
		select {
		case g := <-ch:
			got[g] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("granted %v, waited 10 s for %d", got, n)
		}
	}
	return got
}

// Bytes given back go to the requests waiting a client at a time, and a request that does not
// fit is passed over by one that does. Worked by hand, a budget of 400 bytes:
//
//   - h and g hold 200 each; a1 (client a, 50), a2 (a, 40), b1 (b, 30) and c1 (c, 100) wait,
//     in that order. h gives its 200 back: a1, b1 and c1 take 180 in turn (a, b, c), and a2,
//     a's second, finds 20 free and waits (in the order they came, a2 would have taken its 40
//     before b1 and c1, and c1 would have waited);
//   - x1 (x, 120) and y1 (y, 40) wait behind a2; b1 gives its 30 back: 50 free, a2 takes 40
//     (its turn), x1 does not fit and y1's 40 does not either (10 free); c1 gives its 100 back:
//     110 free, x1 still does not fit, y1 takes 40 (passing x1 by); g gives its 200 back: x1
//     takes 120.
func TestWaitingTakeTurns(t *testing.T) {
	bb := turnsBudget(400)
	h, g := bb.mustHold(t, "h", 200), bb.mustHold(t, "g", 200)
	ch := make(chan string, 8)
	bb.startWaiting(t, "a1", "a", 50, ch)
	bb.startWaiting(t, "a2", "a", 40, ch)
	bb.startWaiting(t, "b1", "b", 30, ch)
	bb.startWaiting(t, "c1", "c", 100, ch)
	h.release()
	if got := grants(t, ch, 3); !got["a1"] || !got["b1"] || !got["c1"] {
		t.Fatalf("h's 200 bytes went to %v; want a1, b1 and c1", got)
	}
	if held, free := bb.holding("a"); held != 50 || free != 20 {
		t.Fatalf("a holds %d, %d free; want 50 and 20", held, free)
	}
	bb.startWaiting(t, "x1", "x", 120, ch)
	bb.startWaiting(t, "y1", "y", 40, ch)
	bb.give("b", 30)
	if got := grants(t, ch, 1); !got["a2"] {
		t.Fatalf("b1's 30 bytes went to %v; want a2", got)
	}
	bb.give("c", 100)
	if got := grants(t, ch, 1); !got["y1"] {
		t.Fatalf("c1's 100 bytes went to %v; want y1", got)
	}
	g.release()
	if got := grants(t, ch, 1); !got["x1"] {
		t.Fatalf("g's 200 bytes went to %v; want x1", got)
	}
	if _, free := bb.holding("x"); free != 400-50-40-40-120 {
		t.Fatalf("%d free; want 150", free)
	}
}
