package api

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
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
// name is sent on granted when they are granted. The request ends with the test (its
// context), and its goroutine with it: one that outlived its test, waiting its minute, was
// refused in another test's time and set Retry-After on a nil answer (the package's binary
// panicked in a fresh-clone CI).
func (bb *bodyBudget) startWaiting(t *testing.T, name, client string, n int64, granted chan<- string) {
	t.Helper()
	h := &requestHold{budget: bb, client: client, ctx: t.Context(), w: httptest.NewRecorder()}
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		if _, err := h.take(n, holdBody); err == nil {
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

// Loads do not wait: a load of 50 bytes while the budget is taken is refused at once. Large
// requests take at most three quarters of the budget, a quarter kept for small ones,
// and bytes given back go to the smallest request waiting first, each client's in their
// order. Worked by hand, a budget of 6,400 bytes (a 64th: 100; three quarters: 4,800):
//
//   - h holds 3,000 and g 1,800 (4,800): a large request l1 (200) waits, and a small one, s
//     (100), takes its bytes at once; 15 more small ones of 100 hold the rest (6,400);
//   - b1 (client b, 90), a1 (a, 60) and a2 (a, 50) wait, in that order. s gives its 100
//     back: a1 takes 60, the smallest (b1, which came first, would have in their order), and
//     a2 finds 40 free; k1 gives 100 back: a2 takes 50 and b1 90 (6,400 again);
//   - l1 waits until the large ones hold 4,600 or less: h gives its 3,000 back, and l1 takes
//     its 200.
func TestWaitingTakeTurns(t *testing.T) {
	bb := turnsBudget(6400)
	h := bb.mustHold(t, "h", 3000)
	bb.mustHold(t, "g", 1800)
	ch := make(chan string, 8)
	bb.startWaiting(t, "l1", "l", 200, ch)
	bb.mustHold(t, "s", 100)
	for i := range 15 {
		bb.mustHold(t, fmt.Sprintf("k%d", i+1), 100)
	}
	bb.startWaiting(t, "b1", "b", 90, ch)
	bb.startWaiting(t, "a1", "a", 60, ch)
	bb.startWaiting(t, "a2", "a", 50, ch)
	load := &requestHold{budget: bb, client: "z", ctx: context.Background(), w: httptest.NewRecorder()}
	if _, err := load.take(50, holdLoad); err != errRequestsBusy {
		t.Fatalf("a load of 50 bytes while the budget was taken: %v; want busy at once", err)
	}
	bb.give("s", 100)
	if got := grants(t, ch, 1); !got["a1"] {
		t.Fatalf("s's 100 bytes went to %v; want a1", got)
	}
	if _, free := bb.holding("a"); free != 40 {
		t.Fatalf("%d free; want 40", free)
	}
	bb.give("k1", 100)
	if got := grants(t, ch, 2); !got["a2"] || !got["b1"] {
		t.Fatalf("k1's 100 bytes went to %v; want a2 and b1", got)
	}
	if len(bb.queue) != 1 || len(bb.queue["l"]) != 1 {
		t.Fatalf("waiting: %v; want l1 alone", bb.queue)
	}
	h.release()
	if got := grants(t, ch, 1); !got["l1"] {
		t.Fatalf("h's 3,000 bytes went to %v; want l1", got)
	}
	if bb.inQueue != 0 {
		t.Fatalf("%d counted waiting; want 0", bb.inQueue)
	}
}

// At most maxWaiting requests wait in all (8 a client): with the budget taken, 256 requests
// of 32 clients wait, and the 257th, of a 33rd client, is answered busy at once.
func TestWaitingBounded(t *testing.T) {
	bb := turnsBudget(6400)
	bb.mustHold(t, "h", 3200)
	bb.mustHold(t, "g", 1600) // (large ones take three quarters at most)
	bb.mustHold(t, "s", 100)
	for i := range 15 {
		bb.mustHold(t, fmt.Sprintf("k%d", i+1), 100)
	}
	ch := make(chan string, maxWaiting)
	for i := range maxWaiting {
		bb.startWaiting(t, fmt.Sprint(i), fmt.Sprintf("c%d", i/maxWaitingPerClient), 10, ch)
	}
	h := &requestHold{budget: bb, client: "late", ctx: context.Background(), w: httptest.NewRecorder()}
	done := make(chan error, 1)
	go func() { _, err := h.take(10, holdBody); done <- err }()
	select {
	case err := <-done:
		if err != errRequestsBusy {
			t.Fatalf("the 257th request waiting: %v; want busy", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the 257th request waited")
	}
}

// The clients cut hold a quarter of the budget in all, besides a 64th each: 64 addresses each
// stalling bodies just under a 64th held all of it again (hostile round 147). By hand, a
// budget of 6,400 bytes (a 64th: 100; a quarter: 1,600): 17 clients cut, each holding
// nothing, then asking for 100: the first 16 take 1,600, the 17th is refused (penalized), a
// client not cut takes 100 at once; one of the 16 gives its 100 back, and the 17th takes
// them. A client whose penalty is over is forgiven: what it holds counts no more.
func TestCutClientsShareAQuarter(t *testing.T) {
	bb := newBodyBudget(6400, errRequestsBusy, "--request-body-bytes")
	bb.holds, bb.cutUntil = map[*requestHold]struct{}{}, map[string]time.Time{}
	now := time.Now()
	for i := range 17 {
		bb.penalize(fmt.Sprintf("p%d", i), now)
	}
	var holds []*requestHold
	for i := range 16 {
		holds = append(holds, bb.mustHold(t, fmt.Sprintf("p%d", i), 100))
	}
	p16 := &requestHold{budget: bb, client: "p16", ctx: context.Background(), w: httptest.NewRecorder()}
	var pen *errPenalized
	if _, err := p16.take(100, holdLoad); !errors.As(err, &pen) {
		t.Fatalf("the 17th client cut, past the quarter: %v; want penalized", err)
	}
	bb.mustHold(t, "fresh", 100)
	holds[0].release()
	bb.mustHold(t, "p16", 100)
	if bb.penHeld != 1600 {
		t.Fatalf("the clients cut hold %d; want 1,600", bb.penHeld)
	}
	bb.mu.Lock()
	bb.cutUntil["p1"] = now.Add(-time.Second) // over
	bb.mu.Unlock()
	bb.mustHold(t, "p1", 0+1) // forgiven: its 100 and this byte count no more among the cut
	if bb.penHeld != 1500 {
		t.Fatalf("the clients cut hold %d after p1 was forgiven; want 1,500", bb.penHeld)
	}
}

// A client cut again, after its penalty or during it, is penalized twice as long, up to 16
// minutes; its other holds cut in the same look count once; an hour after its last cut, a
// minute again. By hand: cuts at 0, 0 (the same look), 0.5 min (during the first penalty),
// 5 min, 10 min, 30 min, 70 min and 140 min give penalties of 1, 1, 2, 4, 8, 16, 16 and 1
// minutes.
func TestCutAgainPenalizedLonger(t *testing.T) {
	bb := newBodyBudget(6400, errRequestsBusy, "--request-body-bytes")
	bb.holds, bb.cutUntil = map[*requestHold]struct{}{}, map[string]time.Time{}
	t0 := time.Now()
	for _, c := range []struct {
		at, want time.Duration
	}{{0, 1}, {0, 1}, {30, 2}, {300, 4}, {600, 8}, {1800, 16}, {4200, 16}, {8400, 1}} {
		at := t0.Add(c.at * time.Second)
		bb.mu.Lock()
		if until, ok := bb.cutUntil["a"]; ok && !at.Before(until) {
			bb.forgive("a") // (takeFor forgives a client whose penalty is over)
		}
		bb.penalize("a", at)
		got := bb.cutUntil["a"].Sub(at)
		bb.mu.Unlock()
		if got != c.want*time.Minute {
			t.Errorf("cut at %v: penalized %v; want %v", c.at*time.Second, got, c.want*time.Minute)
		}
	}
}

// bodyHold is a new request of client whose body has taken its first bytes.
func (bb *bodyBudget) bodyHold(t *testing.T, client string, first int64) *requestHold {
	t.Helper()
	h := &requestHold{budget: bb, client: client, ctx: t.Context(), w: httptest.NewRecorder()}
	if _, err := h.take(first, holdBody); err != nil {
		t.Fatalf("%s's first %d bytes: %v", client, first, err)
	}
	return h
}

// takeLater asks for n more bytes of h's body, and returns once the request waits for them
// (failing t when it is answered at once), with the channel its answer comes on.
func (bb *bodyBudget) takeLater(t *testing.T, h *requestHold, n int64) <-chan error {
	t.Helper()
	answer := make(chan error, 1)
	go func() { _, err := h.take(n, holdBody); answer <- err }()
	for !bb.queued(h) {
		select {
		case err := <-answer:
			t.Fatalf("%s's later %d bytes: %v at once; want a wait", h.client, n, err)
		case <-time.After(time.Millisecond):
		}
	}
	return answer
}

// A body's later bytes wait their turn as its first do, holding those read before, unless an
// older request waits so; a younger one is then refused at once. By hand, a budget of 6,400
// bytes (a 64th: 100; a quarter: 1,600; half: 3,200; three quarters: 4,800):
//
//   - v loads 3,200 (half: a viewer's comparison). e's body takes its first 50 (small: the
//     whole budget is its limit; 3,250 held), then asks for 2,000 more: 5,250 passes three
//     quarters, and it waits, holding 50 (without the fix: busy at once, every time v held
//     half, whatever e tried);
//   - f's body, come after e's, holds 50, and asks for 2,800 more: refused at once, e waiting
//     holding bytes (the two could otherwise wait for each other's bytes);
//   - v's answer is written: its 3,200 come back, and e takes its 2,000 (2,100 held).
func TestBodyLaterBytesWait(t *testing.T) {
	bb := turnsBudget(6400)
	v := bb.mustHold(t, "v", 3200)
	e := bb.bodyHold(t, "e", 50)
	granted := bb.takeLater(t, e, 2000)
	f := bb.bodyHold(t, "f", 50)
	if _, err := f.take(2800, holdBody); err != errRequestsBusy {
		t.Fatalf("f's later 2,800 bytes: %v; want busy at once", err)
	}
	v.release()
	select {
	case err := <-granted:
		if err != nil {
			t.Fatalf("e's later 2,000 bytes once v gave back its 3,200: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("e's later 2,000 bytes were not granted within 10 s of v's 3,200 given back")
	}
	if held, free := bb.holding("e"); held != 2050 || free != 4300 {
		t.Fatalf("e holds %d, %d free; want 2,050 and 4,300", held, free)
	}
	f.release()
	e.release()
}

// An older request that comes to wait holding bytes refuses the younger ones waiting so, as
// many as the bytes it lacks (wound-wait). By hand, a budget of 6,400 bytes (three quarters:
// 4,800; a 64th: 100):
//
//   - o's body takes its first 50, then v loads 3,200 and y's body, come after o's, takes its
//     first 50 (3,300 held);
//   - y asks for 2,000 more: 5,300 passes 4,800, and it waits holding 50 (no older request
//     waits so);
//   - o asks for 1,550 more: 4,850 passes 4,800 by 50, and y's 50 make it up: y is refused
//     (busy), and once y gives its 50 back o takes its 1,550 (4,800 held: o 1,600, v 3,200).
//
// When both waited (the rule before: they fitted in three quarters together, 2,050 and 1,600),
// each waited for the other's bytes, v holding the rest, until their waits ended: a client's
// next request came after a request that had waited its turn and kept it out
// (TestRequestsWaitTheirTurn).
func TestOlderBodyRefusesYoungerWaiting(t *testing.T) {
	bb := turnsBudget(6400)
	o := bb.bodyHold(t, "o", 50)
	v := bb.mustHold(t, "v", 3200)
	y := bb.bodyHold(t, "y", 50)
	yAnswer := bb.takeLater(t, y, 2000)
	oAnswer := make(chan error, 1)
	go func() { _, err := o.take(1550, holdBody); oAnswer <- err }()
	select {
	case err := <-yAnswer:
		if err != errRequestsBusy {
			t.Fatalf("y, younger, once o came to wait: %v; want busy", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("y, younger, was still waiting 10 s after o came to wait holding bytes")
	}
	y.release()
	select {
	case err := <-oAnswer:
		if err != nil {
			t.Fatalf("o's later 1,550 bytes once y gave back its 50: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("o's later 1,550 bytes were not granted within 10 s of y's 50 given back")
	}
	if held, free := bb.holding("o"); held != 1600 || free != 1600 {
		t.Fatalf("o holds %d, %d free; want 1,600 and 1,600", held, free)
	}
	o.release()
	v.release()
}
