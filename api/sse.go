package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
)

// Pacing of the streams.
const (
	// streamMinInterval is the least time between two counts events of one stream.
	streamMinInterval = 250 * time.Millisecond
	// streamKeepAlive is how often a quiet stream sends a comment, so proxies keep it open.
	streamKeepAlive = 15 * time.Second
	// streamPoll is how often a results stream looks for results when nothing tells it.
	streamPoll = 2 * time.Second
	// streamPage is how many results a stream reads at once; the store also stops a page at
	// store.MaxResultReadBytes of values (at least one result), which bounds what a stream
	// holds.
	streamPage = 1000
)

// DefaultStreamBufferBytes is the default of Config.StreamBufferBytes: 64 MiB, the pages of 16
// results streams read at once.
const DefaultStreamBufferBytes = 64 << 20

// DefaultStreamWriteTimeout is the default of Config.StreamWriteTimeout: a stream's client
// that takes no event for a minute is disconnected.
const DefaultStreamWriteTimeout = time.Minute

// streamBuffer accounts for the bytes of result values that the results streams read from
// the store and have not written to their clients yet. A stream holds one page at a time, at
// most store.MaxResultReadBytes (or one larger result), whatever its client does: a client
// that reads slowly, or not at all, makes its stream wait rather than buffer, and its results
// wait in the store. The streams together hold at most pages of Config.StreamBufferBytes:
// a stream reserves a page's budget before it reads one (pages), and the rest of a larger
// page's bytes once it has read it (and all of them before it reads that page again), and
// waits when it cannot, until a stream gives pages back (freedSignal) or its poll. The streams of one identity
// (or client address) reserve at most a quarter of it, but one page always (as the request
// bodies share theirs), and, holding pages, no more while another client's stream waits for
// the last pages free; a page must be written within the write timeout, whole (sseWriter.until).
// Without these, 16 streams of one client that never reads held every page for a write
// timeout, again and again, and 4 clients that read a little at a time held them for good.
type streamBuffer struct {
	now, peak atomic.Int64
	open      atomic.Int64 // results streams being served
	waits     atomic.Int64 // pages not reserved for want of room
	gauge     prometheus.Gauge
	pages     *bodyBudget // of Config.StreamBufferBytes, reserved store.MaxResultReadBytes a page
	mu        sync.Mutex
	waiting   map[string]int // by client, its streams that found no room and wait for it
	// freed is closed, and replaced, when a stream gives a page back: the streams that found
	// no room wait on it, so they look again at once rather than on their poll.
	freed chan struct{}
}

// freedSignal returns the channel closed when a stream next gives pages back. A stream takes
// it before it tries to reserve, so that a page given back in between still wakes it.
func (b *streamBuffer) freedSignal() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed == nil {
		b.freed = make(chan struct{})
	}
	return b.freed
}

// wake wakes the streams waiting for room (freedSignal).
func (b *streamBuffer) wake() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
}

func newStreamBuffer(reg prometheus.Registerer, budget int64) *streamBuffer {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scenario_server_stream_buffered_bytes",
		Help: "Bytes of result values the results streams read from the store and have not written to their clients yet.",
	})
	if reused, err := registerOrReuse(reg, g); err == nil {
		g = reused
	}
	if budget <= 0 {
		budget = DefaultStreamBufferBytes
	}
	pages := newBodyBudget(max(budget, store.MaxResultReadBytes), errPagesFull, "")
	pages.most = pages.size // a stream takes turns with the others waiting (reserve)
	return &streamBuffer{gauge: g, pages: pages, waiting: map[string]int{}}
}

// errPagesFull is a results stream's page that does not fit in the streamBuffer now: it waits.
var errPagesFull = errors.New("the results streams' buffer is full")

// pageReservation is what one results stream has reserved of the streamBuffer.
type pageReservation struct {
	b       *streamBuffer
	client  string
	bytes   int64 // reserved now
	waiting bool  // counted in b.waiting
	// want is the bytes of the page the stream read last and could not reserve (one result
	// larger than a page's budget): it reserves them before it reads the page again, rather
	// than read it, find no room and drop it, again and again (hostile round 16, F5).
	want int64
}

// need is what r reserves before it reads a page: a page's budget, or the bytes of the large
// page it could not reserve last time (at most the whole budget).
func (r *pageReservation) need() int64 {
	return max(store.MaxResultReadBytes, min(r.want, r.b.pages.size))
}

// reserve reserves n more bytes, and reports whether it could; a stream that could not is
// counted as waiting until it can, or ends (done). A client that holds pages already, or a
// stream not waiting yet, takes n only when a page is left after it for each other client
// waiting.
func (r *pageReservation) reserve(n int64) bool {
	b := r.b
	b.mu.Lock()
	others := len(b.waiting)
	if b.waiting[r.client] > 0 {
		others--
	}
	b.mu.Unlock()
	held, free := b.pages.holding(r.client)
	// A stream not waiting already (one that has just given a page back, say) yields too:
	// else it takes the page it gave back before the waiting ones look again (16 clients of
	// one stream each, reading slowly, kept a 17th waiting for good: hostile round 16).
	// (The rest of a large page it has read is not a new page: it takes it when it fits.)
	crowding := (held > r.bytes || !r.waiting && r.bytes == 0) && free-n < int64(others)*store.MaxResultReadBytes
	if !crowding && b.pages.take(r.client, r.bytes, n, false) == nil {
		r.bytes += n
		r.setWaiting(false)
		return true
	}
	b.waits.Add(1)
	r.setWaiting(true)
	return false
}

// release gives back what r holds.
func (r *pageReservation) release() {
	if r.bytes == 0 {
		return
	}
	r.b.pages.give(r.client, r.bytes)
	r.bytes = 0
	r.b.wake()
}

// done releases r and stops counting it as waiting: its stream ends.
func (r *pageReservation) done() {
	r.release()
	r.setWaiting(false)
}

func (r *pageReservation) setWaiting(w bool) {
	if r.waiting == w {
		return
	}
	r.waiting = w
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if w {
		b.waiting[r.client]++
	} else if b.waiting[r.client]--; b.waiting[r.client] <= 0 {
		delete(b.waiting, r.client)
	}
}

// add counts n more bytes held (fewer when n < 0).
func (b *streamBuffer) add(n int64) {
	v := b.now.Add(n)
	b.gauge.Add(float64(n))
	for {
		p := b.peak.Load()
		if v <= p || b.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// CloseStreams ends the server-sent event streams being served, and those that start later:
// the server calls it when it shuts down, so that open streams do not hold the shutdown up.
func (h *Handler) CloseStreams() { h.closeStreams() }

type resultsStreamInput struct {
	Name        string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Sink        string `path:"sinkId" doc:"The id of a collect sink node." example:"alerts"`
	After       int64  `query:"after" minimum:"0" doc:"Start after this result id; 0 (the default) streams every result from the first."`
	LastEventID string `header:"Last-Event-ID" doc:"Sent by EventSource when it reconnects: the id of the last result it got; wins over after."`
}

// sseResponse documents a text/event-stream answer.
func sseResponse(desc string) map[string]*huma.Response {
	return map[string]*huma.Response{"200": {
		Description: desc,
		Content:     map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString}}},
	}}
}

func (h *handlers) registerStreams(hapi huma.API) {
	h.streamBuffer = newStreamBuffer(h.metrics, h.streamBufferBytes)
	register(hapi, h, huma.Operation{
		OperationID: "stream-counts",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/counts/stream",
		Summary:     "Stream a scenario's live counts",
		Description: "Server-sent events: an event \"counts\" with a LiveCounts object (as GET .../counts answers) at once, then whenever they " +
			"change, at most every 250 ms. A comment line every 15 s keeps the connection open.",
		Tags:      []string{tagDeployments},
		Errors:    []int{http.StatusBadRequest, http.StatusNotFound},
		Responses: sseResponse("A stream of \"counts\" events, each data a LiveCounts object."),
	}, h.countsStream)

	register(hapi, h, huma.Operation{
		OperationID: "stream-sink-results",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/sinks/{sinkId}/results/stream",
		Summary:     "Stream a collect sink's results",
		Description: "Server-sent events: an event \"result\" per stored result, oldest first, with the result's id as the event id and a " +
			"SinkResult object as data; first those after the cursor, then new ones as checkpoints store them. EventSource reconnects with " +
			"Last-Event-ID and the stream resumes after it, so no result is missed or repeated. The stream goes at its client's pace, " +
			"like a consumer of a log: the server reads the results from the store a page at a time (at most 1,000 results and 4 MiB of " +
			"values, or one larger result) and reads the next page once the client has taken this one, so a slow client falls behind " +
			"without the server buffering for it. A client that takes nothing for a minute (by default) is disconnected; it reconnects with " +
			"Last-Event-ID and continues where it stopped.",
		Tags:      []string{tagDeployments},
		Errors:    []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
		Responses: sseResponse("A stream of \"result\" events, each data a SinkResult object."),
	}, h.resultsStream)
}

// sseWriter writes server-sent events and flushes each. A write that its client does not
// take within timeout fails, which ends the stream; after close, every write fails at once.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	mu      sync.Mutex // orders close before or after a deadline's setting
	closed  bool
	until   time.Time // when set, no write's deadline is later: the page being written's
}

func startSSE(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	s.deadline()
	w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
	return s
}

// deadline gives the next write timeout to complete (none once closed).
func (s *sseWriter) deadline() {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := time.Now().Add(s.timeout)
	if !s.until.IsZero() && s.until.Before(d) {
		d = s.until
	}
	if s.closed {
		d = time.Now()
	}
	_ = s.rc.SetWriteDeadline(d) // not every ResponseWriter has deadlines
}

// writeWithin makes the writes from now on complete by d, all together (zero: each within
// the timeout).
func (s *sseWriter) writeWithin(d time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until = d
}

// close makes the stream's writes fail from now on, one blocked on a client that takes
// nothing too, so that its handler returns.
func (s *sseWriter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	_ = s.rc.SetWriteDeadline(time.Now())
}

// closeOnShutdown closes sse when the server closes its streams (CloseStreams) before the
// returned function is called: a stream writing to a client that takes nothing would
// otherwise hold the shutdown for its write timeout.
func (h *handlers) closeOnShutdown(sse *sseWriter) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-h.streamsDone:
			sse.close()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// event writes one event; id is left out when empty.
func (s *sseWriter) event(id, name string, data any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return s.eventJSON(id, name, body)
}

// eventJSON is event with its data encoded already (one line of JSON).
func (s *sseWriter) eventJSON(id, name string, body []byte) error {
	s.deadline()
	if id != "" {
		if _, err := fmt.Fprintf(s.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, body); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) comment(text string) error {
	s.deadline()
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// changed returns a channel closed when the runtime has news; nil (never ready) without one.
func (h *handlers) changed() <-chan struct{} {
	if h.runtime == nil {
		return nil
	}
	return h.runtime.Changed()
}

func (h *handlers) countsStream(ctx context.Context, in *scenarioPath) (*huma.StreamResponse, error) {
	if err := h.checkScenario(ctx, in.Name); err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		r, w := humachi.Unwrap(hctx)
		sse := startSSE(w, h.streamWriteTimeout)
		if r.Method == http.MethodHead { // the headers are the answer
			return
		}
		defer h.closeOnShutdown(sse)()
		keepAlive := time.NewTicker(streamKeepAlive)
		defer keepAlive.Stop()
		recheck := time.NewTicker(h.streamRecheck)
		defer recheck.Stop()
		sc := h.countsEncoder.open(in.Name)
		defer h.countsEncoder.close(in.Name)
		var last []byte
		for {
			changed := h.changed()
			data, same := h.encodedCounts(sc, in.Name)
			// same leaves out updatedAt, which changes with every publication, even when
			// nothing else does.
			if !bytes.Equal(same, last) {
				if err := sse.eventJSON("", "counts", data); err != nil {
					return
				}
				last = same
				keepAlive.Reset(streamKeepAlive)
			}
			select {
			case <-r.Context().Done():
				return
			case <-h.streamsDone:
				return
			case <-keepAlive.C:
				if sse.comment("keep-alive") != nil {
					return
				}
			case <-recheck.C:
				if !h.stillAllowed(r, sse) {
					return
				}
			case <-changed:
				select { // pace the events
				case <-time.After(streamMinInterval):
				case <-r.Context().Done():
					return
				case <-h.streamsDone:
					return
				}
			}
		}
	}}, nil
}

func (h *handlers) resultsStream(ctx context.Context, in *resultsStreamInput) (*huma.StreamResponse, error) {
	if err := h.checkSink(ctx, in.Name, in.Sink); err != nil {
		return nil, err
	}
	after := in.After
	if in.LastEventID != "" {
		id, err := strconv.ParseInt(in.LastEventID, 10, 64)
		if err != nil || id < 0 {
			return nil, problemf(http.StatusBadRequest, CodeBadRequest, "Last-Event-ID %q is not a result id", in.LastEventID)
		}
		after = id
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		r, w := humachi.Unwrap(hctx)
		ctx := r.Context()
		sse := startSSE(w, h.streamWriteTimeout)
		if r.Method == http.MethodHead { // the headers are the answer
			return
		}
		defer h.closeOnShutdown(sse)()
		keepAlive := time.NewTicker(streamKeepAlive)
		defer keepAlive.Stop()
		poll := time.NewTicker(h.streamPoll)
		defer poll.Stop()
		recheck := time.NewTicker(h.streamRecheck)
		defer recheck.Stop()
		h.streamBuffer.open.Add(1)
		var held int64 // bytes of the page's values not written yet
		defer func() {
			h.streamBuffer.add(-held)
			h.streamBuffer.open.Add(-1)
		}()
		res := &pageReservation{b: h.streamBuffer, client: rateKey(r)}
		defer res.done()
		for {
			changed, freed := h.changed(), h.streamBuffer.freedSignal()
			// A page's budget reserved, or wait as when nothing is new (the poll looks again),
			// and until a stream gives pages back.
			if res.reserve(res.need()) {
				n, ok := h.streamPage(ctx, sse, in, res, &after, &held)
				res.release()
				if !ok {
					return
				}
				if n > 0 {
					// A page is cut at a byte budget as well as at streamPage results: read on
					// until one comes back empty.
					keepAlive.Reset(streamKeepAlive)
					continue
				}
			}
			if !res.waiting {
				freed = nil // room was not what it lacked
			}
			select {
			case <-ctx.Done():
				return
			case <-h.streamsDone:
				return
			case <-keepAlive.C:
				if sse.comment("keep-alive") != nil {
					return
				}
			case <-recheck.C:
				if !h.stillAllowed(r, sse) {
					return
				}
			case <-changed:
			case <-freed:
			case <-poll.C:
			}
		}
	}}, nil
}

// streamPage reads the results of in's sink after *after, one page, and writes them to sse
// within the stream's write timeout, moving *after on and keeping *held (and the
// streamBuffer) at the bytes of values not written yet. A page of more bytes than res holds
// (one larger result) is written once res has reserved them too, and left for later when it
// cannot. It returns how many it wrote, and false when the stream must end.
func (h *handlers) streamPage(ctx context.Context, sse *sseWriter, in *resultsStreamInput, res *pageReservation, after, held *int64) (int, bool) {
	page, err := h.store.ReadSinkResults(ctx, in.Name, in.Sink, *after, streamPage)
	if err != nil {
		if ctx.Err() == nil {
			loggerFrom(ctx).Error("streaming sink results", "scenario", in.Name, "sink", in.Sink, "error", err)
		}
		return 0, false
	}
	var bytes int64
	for _, r := range page {
		bytes += int64(len(r.Value))
	}
	if more := min(bytes, h.streamBuffer.pages.size) - res.bytes; more > 0 && !res.reserve(more) {
		res.want = bytes // no room for it now: as when nothing is new, and reserved first next time
		return 0, true
	}
	res.want = 0
	sse.writeWithin(time.Now().Add(sse.timeout))
	defer sse.writeWithin(time.Time{})
	for _, res := range page {
		*held += int64(len(res.Value))
		h.streamBuffer.add(int64(len(res.Value)))
	}
	for i, res := range page {
		if err := sse.event(strconv.FormatInt(res.ID, 10), "result", sinkResultOut(res)); err != nil {
			return len(page), false
		}
		*after = res.ID
		page[i] = store.SinkResult{} // written: its value may go
		*held -= int64(len(res.Value))
		h.streamBuffer.add(-int64(len(res.Value)))
	}
	return len(page), true
}

// stillAllowed checks a stream's credentials again (every Config.StreamRecheck): a token
// revoked or expired since the stream opened, a session that ended, or a role that no longer
// suffices for the stream's route ends the stream, with a last "end" event saying why.
func (h *handlers) stillAllowed(r *http.Request, sse *sseWriter) bool {
	if h.authn == nil {
		return true
	}
	need := auth.Viewer
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if role, ok := RouteRole(r.Method, rc.RoutePattern()); ok {
			need = role
		}
	}
	id, err := h.authn.Authenticate(r)
	switch {
	case err != nil && !errors.Is(err, auth.ErrNoCredentials) && !errors.Is(err, auth.ErrInvalidCredentials):
		return true // the store could not say: keep the stream, check again later
	case err != nil:
		_ = sse.event("", "end", map[string]string{"reason": "the credentials are no longer valid: " + err.Error()})
		return false
	case !id.Can(need):
		_ = sse.event("", "end", map[string]string{"reason": "this stream needs the " + string(need) + " role"})
		return false
	}
	return true
}
