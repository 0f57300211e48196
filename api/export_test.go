package api

import "time"

// StreamBuffer returns what the results streams of h hold: the bytes of result values read
// from the store and not written yet, now and at most at once since h was built, and how
// many results streams are open.
func StreamBuffer(h *Handler) (now, peak, open int64) {
	b := h.h.streamBuffer
	return b.now.Load(), b.peak.Load(), b.open.Load()
}

// StreamPages is the bytes of page budget the results streams have reserved, and how many
// times one found no room for a page.
func StreamPages(h *Handler) (reserved, waits int64) {
	b := h.h.streamBuffer
	b.pages.mu.Lock()
	defer b.pages.mu.Unlock()
	for _, n := range b.pages.held {
		reserved += n
	}
	return reserved, b.waits.Load()
}

// CountsEncodings is how many scenarios the counts streams keep an encoding of.
func CountsEncodings(h *Handler) int {
	c := &h.h.countsEncoder
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}

// ListsWaiting is how many scenario lists wait for their turn (ScenarioListsAtOnce).
func ListsWaiting(h *Handler) int64 { return h.h.listsWaiting.Load() }

// SetStreamPoll sets how often h's results streams look for results when nothing tells them.
func SetStreamPoll(h *Handler, d time.Duration) { h.h.streamPoll = d }

// JSONTextBytes is jsonTextBytes, for tests.
var JSONTextBytes = jsonTextBytes
