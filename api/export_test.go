package api

// StreamBuffer returns what the results streams of h hold: the bytes of result values read
// from the store and not written yet, now and at most at once since h was built, and how
// many results streams are open.
func StreamBuffer(h *Handler) (now, peak, open int64) {
	b := h.h.streamBuffer
	return b.now.Load(), b.peak.Load(), b.open.Load()
}
