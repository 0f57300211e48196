package api

import (
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
