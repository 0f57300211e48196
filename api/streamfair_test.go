package api

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/store"
)

// While another client's stream waits for room, a client holding pages takes no more, even
// within its quarter: four clients holding four pages each (all 64 MiB) and a fifth waiting,
// the page one of them gives back goes to the fifth, not to the first's next stream.
func TestStreamPagesGoToTheClientWaiting(t *testing.T) {
	b := newStreamBuffer(prometheus.NewRegistry(), DefaultStreamBufferBytes)
	page := int64(store.MaxResultReadBytes)
	held := map[string][]*pageReservation{}
	for _, c := range []string{"a", "b", "c", "d"} {
		for range 4 {
			r := &pageReservation{b: b, client: c}
			if !r.reserve(page) {
				t.Fatalf("client %s's page %d refused", c, len(held[c])+1)
			}
			held[c] = append(held[c], r)
		}
	}
	v := &pageReservation{b: b, client: "v"}
	if v.reserve(page) {
		t.Fatal("a page reserved beyond the budget")
	}
	held["a"][0].done()
	next := &pageReservation{b: b, client: "a"}
	if next.reserve(page) {
		t.Error("client a took the page given back while client v waits (a holds 3 pages)")
	}
	if !v.reserve(page) {
		t.Error("client v's page refused with a page free")
	}
	// Nobody else waits once v has its page: a takes its fourth again when one is free.
	next.done()
	held["b"][0].done()
	if again := (&pageReservation{b: b, client: "a"}); !again.reserve(page) {
		t.Error("client a's fourth page refused with a page free and nobody waiting")
	}
}

// With room for everyone, clients holding pages and waiting ones do not keep each other
// waiting: a and b hold a page each and wait for a second (the budget was full); once 12
// pages are free, each gets its second. And a client holding pages leaves one for each other
// client waiting: d stops at 3 pages (its quarter is 4) with 2 free and 2 clients waiting.
func TestStreamPagesWithRoomForAll(t *testing.T) {
	page := int64(store.MaxResultReadBytes)
	b := newStreamBuffer(prometheus.NewRegistry(), 16*page)
	take := func(c string) *pageReservation {
		r := &pageReservation{b: b, client: c}
		r.reserve(page)
		return r
	}
	var fill []*pageReservation
	for _, c := range []string{"f1", "f2", "f3", "f4"} {
		for range 3 {
			fill = append(fill, take(c))
		}
	}
	take("a")
	take("b")
	take("g")
	take("g")
	a2, b2 := take("a"), take("b")
	if a2.bytes != 0 || b2.bytes != 0 {
		t.Fatal("a page taken beyond the budget")
	}
	for _, r := range fill {
		r.done()
	}
	if !a2.reserve(page) {
		t.Error("client a's second page refused with 12 free and one other client waiting")
	}
	if !b2.reserve(page) {
		t.Error("client b's second page refused with 11 free and nobody else waiting")
	}
	// 10 free: b takes 2 more and then waits (its quarter is 4 pages), and so does e (as a
	// stream refused earlier would). c takes 3 (5 left), then d 3, stopping with 2 free for
	// the 2 clients waiting, though its quarter would give it a fourth.
	take("b")
	take("b")
	if r := take("b"); r.bytes != 0 {
		t.Fatal("client b past its quarter")
	}
	(&pageReservation{b: b, client: "e"}).setWaiting(true)
	for i := range 3 {
		if r := take("c"); r.bytes == 0 {
			t.Fatalf("client c's page %d refused", i+1)
		}
	}
	for i := range 3 {
		if r := take("d"); r.bytes == 0 {
			t.Fatalf("client d's page %d refused", i+1)
		}
	}
	if r := take("d"); r.bytes != 0 {
		t.Error("client d took a fourth page, leaving 1 for 2 clients waiting")
	}
}

// deadlineRecorder is an http.ResponseWriter that records the write deadlines set on it
// (http.ResponseController sets them through its SetWriteDeadline).
type deadlineRecorder struct {
	httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// A page is written within the write timeout as a whole: each of its events' writes gets the
// page's deadline, not a timeout of its own (a client that takes an event a little before
// each timeout held its page, and the next, for as long as it read: four such clients kept
// every other client's results stream waiting, hostile round 15). Outside a page, each write
// gets the timeout.
func TestStreamPageDeadline(t *testing.T) {
	w := &deadlineRecorder{ResponseRecorder: *httptest.NewRecorder()}
	sse := startSSE(w, time.Minute)
	page := time.Now().Add(time.Minute)
	sse.writeWithin(page)
	time.Sleep(20 * time.Millisecond) // a later write
	for i := range 3 {
		if err := sse.event("", "result", i); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range w.deadlines[1:] {
		if !d.Equal(page) {
			t.Errorf("a write of the page has deadline %v, want the page's %v", d, page)
		}
	}
	sse.writeWithin(time.Time{})
	before := time.Now()
	if err := sse.comment("keep-alive"); err != nil {
		t.Fatal(err)
	}
	if last := w.deadlines[len(w.deadlines)-1]; last.Before(before.Add(time.Minute)) {
		t.Errorf("a write outside a page has deadline %v, want a minute on from %v", last, before)
	}
}

// A stream that has just given a page back does not take it again while another client's
// stream waits for the last free pages: 16 clients of one stream each, reading slowly, took
// back every page they gave, and a 17th client waited for good (hostile round 16).
func TestStreamPageGivenBackGoesToTheWaiting(t *testing.T) {
	page := int64(store.MaxResultReadBytes)
	b := newStreamBuffer(prometheus.NewRegistry(), 16*page)
	held := make([]*pageReservation, 16)
	for i := range held {
		held[i] = &pageReservation{b: b, client: fmt.Sprintf("c%d", i)}
		if !held[i].reserve(page) {
			t.Fatalf("client c%d's page refused", i)
		}
	}
	v := &pageReservation{b: b, client: "v"}
	if v.reserve(page) {
		t.Fatal("a page beyond the budget")
	}
	held[0].release() // its page written: the stream goes for the next one
	if held[0].reserve(page) {
		t.Error("client c0 took back the page it gave while client v waits")
	}
	if !v.reserve(page) {
		t.Error("client v's page refused with a page free")
	}
}
