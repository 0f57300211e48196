package api

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/scenario-server/scenario-server/auth"
)

// The codes of the rate limits.
const (
	// CodeRateLimited (429): the identity (or, without authentication, the client address)
	// sent more event batches or test runs than its rate allows; Retry-After says in how
	// many seconds the next one is accepted.
	CodeRateLimited = "rate-limited"
	// CodeTestRunsBusy (503): the server is running as many test runs as it runs at once
	// (RateLimits.MaxConcurrentTests), or the identity (or client address) half of them; or,
	// for a deploy, as many deploys run their saved test cases, or the identity's other one
	// does; Retry-After says when to try again.
	CodeTestRunsBusy = "test-runs-busy"
	// CodeTooManyStreams (429): the identity (or client address) has as many server-sent
	// event streams open as it may (RateLimits.MaxStreamsPerClient); Retry-After says when
	// to try again.
	CodeTooManyStreams = "too-many-streams"
	// CodeStreamsBusy (503): the server has as many streams open as it serves at once
	// (RateLimits.MaxStreams).
	CodeStreamsBusy = "streams-busy"
	// CodeIngestBusy (503): the event batches being read and stored hold as many bytes as the
	// server takes at once (RateLimits.IngestBodyBytes); send the batch again after
	// Retry-After.
	CodeIngestBusy = "ingest-busy"
	// CodeRequestsBusy (503): the request bodies other than event batches being read and
	// handled hold as many bytes as the server takes at once (RateLimits.RequestBodyBytes);
	// send the request again after Retry-After.
	CodeRequestsBusy = "requests-busy"
	// CodeTooManyBodies (429): the identity (or client address) is sending as many request
	// bodies at once as it may (RateLimits.MaxBodiesPerClient); Retry-After says when to try
	// again.
	CodeTooManyBodies = "too-many-bodies"
)

// The default rate limits, per identity.
const (
	// DefaultIngestRate is how many event batches (POST .../events) an identity may send
	// per second, after a burst of DefaultIngestBurst.
	DefaultIngestRate  = 1000.0
	DefaultIngestBurst = 1000
	// DefaultTestRate is how many test runs (POST /api/test, POST .../test) an identity may
	// start per second, after a burst of DefaultTestBurst.
	DefaultTestRate  = 2.0
	DefaultTestBurst = 20
	// DefaultMaxConcurrentTests is how many test runs the server runs at once.
	DefaultMaxConcurrentTests = 4
	// DefaultMaxConcurrentValidations is how many graphs the server validates at once
	// (compileGate).
	DefaultMaxConcurrentValidations = 4
	// DefaultMaxStreams is how many server-sent event streams (counts and results) the
	// server serves at once, and DefaultMaxStreamsPerClient how many of them one identity
	// (or client address) holds: a stream is a connection and two goroutines, and a
	// re-attack opened 20,000 (1.5 GB, every file descriptor: new connections were refused).
	DefaultMaxStreams          = 1000
	DefaultMaxStreamsPerClient = 32
	// DefaultIngestBodyBytes is how many bytes of event batches the server holds read and
	// being stored at once: 256 MiB, 25 batches of the 10 MiB body limit (a batch takes
	// about three and a half times its body while it is framed, checked and stored).
	DefaultIngestBodyBytes = 256 << 20
	// DefaultRequestBodyBytes is how many bytes of the other request bodies (scenarios,
	// graphs to test or validate, test cases, ...) the server holds read and being handled
	// at once: 64 MiB. Such a body is decoded as JSON twice (huma checks it against the
	// operation's schema as generic values first), and takes up to about 40 times its size
	// while it is handled: a 9.9 MB graph of empty nodes peaked at 374 MB.
	DefaultRequestBodyBytes = 64 << 20
	// DefaultMinBodyRate is the slowest a request body may arrive, in bytes a second on
	// average, once DefaultBodyRateGrace has passed since the request's headers: the figures
	// of ASP.NET Core Kestrel's MinRequestBodyDataRate. Slower, the request is answered 408
	// and its connection closed. A client sending a byte a second otherwise held its
	// connection, one of --max-connections, for the whole body read timeout (a minute).
	DefaultMinBodyRate   = 240
	DefaultBodyRateGrace = 5 * time.Second
	// DefaultContendedMinRate and DefaultContendedRateWindow are RateLimits.ContendedMinRate
	// and ContendedRateWindow: 32 KiB a second (256 kbit/s) over 5 s. Holding half a budget
	// for its body's minute then takes sending 1.9 MiB in it, less in all than half of a
	// budget of 8 MiB or more.
	DefaultContendedMinRate    = 32 << 10
	DefaultContendedRateWindow = 5 * time.Second
	// DefaultContendedWait is RateLimits.ContendedWait: 10 s, as long as a graph waits for
	// its validation (compileGate).
	DefaultContendedWait = 10 * time.Second
	// DefaultMaxBodiesPerClient is how many request bodies one identity (or client address)
	// sends at once, from its headers until the body has arrived: past it, 429
	// too-many-bodies. Bodies sent just fast enough each held a connection for the body read
	// timeout: enough of them held every connection the server takes (round 25).
	DefaultMaxBodiesPerClient = 64
	// DefaultWriteRate is how many stored writes (the requests that change the store and are
	// in the audit log: saves, imports, archives, deploys, cancels, deploy requests and their
	// answers, test cases, tokens) an identity may make a second, after a burst of
	// DefaultWriteBurst. GitHub's secondary rate limit allows 80 content-creating requests a
	// minute; a script importing 1,000 scenarios takes 140 s.
	DefaultWriteRate  = 5.0
	DefaultWriteBurst = 300
	// DefaultWriteBytesRate is how many bytes of stored writes' bodies an identity may send a
	// second, after a burst of DefaultWriteBytesBurst: one client saving 8 MB versions in a
	// loop stored 1.3 GB in 30 s (round 27). 256 KiB a second is 22 GB a day at most; a person
	// saves a few KB a minute.
	DefaultWriteBytesRate  = 256 << 10
	DefaultWriteBytesBurst = 64 << 20
)

// maxRateKeys bounds the buckets kept: beyond it, idle (full) buckets are dropped, and while
// none is idle new identities share one bucket.
const maxRateKeys = 1 << 16

// RateLimits are the token buckets of ingestion and test runs, one per identity: the
// identity's Subject, or without authentication the client's address. A rate of 0 turns its
// limit off, as MaxConcurrentTests 0 does: the zero RateLimits limits nothing (the server's
// flags start from DefaultRateLimits).
type RateLimits struct {
	// IngestRate is in event batches per second; IngestBurst is the bucket's size.
	IngestRate  float64
	IngestBurst int
	// TestRate is in test runs per second; TestBurst is the bucket's size.
	TestRate  float64
	TestBurst int
	// MaxConcurrentTests is how many test runs run at once, over all identities, half of
	// them (at least 1) for one identity (rateKey); more are answered 503 test-runs-busy.
	// Deploys run their saved test cases beside them, as many at once, one an identity.
	MaxConcurrentTests int
	// MaxConcurrentValidations is how many graphs are validated (compiled) at once, over all
	// identities, half of them (at least 1) for one identity; more wait, up to 10 s, and
	// are then answered 503 requests-busy (compileGate). 0: no bound.
	MaxConcurrentValidations int
	// MaxStreams is how many server-sent event streams are open at once, over all
	// identities; more are answered 503 streams-busy. MaxStreamsPerClient is how many one
	// identity (rateKey) holds; more are answered 429 too-many-streams. 0: no bound.
	MaxStreams, MaxStreamsPerClient int
	// IngestBodyBytes is how many bytes of event batches are read and being stored at once,
	// each batch's counted as they are read (budgetedBody) until it is answered; a batch
	// whose reading passes it is answered 503 ingest-busy. 0: no bound.
	IngestBodyBytes int64
	// RequestBodyBytes is the same for the bodies of every other request (the event batches
	// have IngestBodyBytes), each counted as it is read until it is answered, with the stored
	// versions (graphs) any request loads, GET included, each counted once loaded; a request
	// whose reading or loading passes it is answered 503 requests-busy. 0: no bound.
	RequestBodyBytes int64
	// MinBodyRate is the slowest a request body may arrive, in bytes a second on average
	// from its headers, once BodyRateGrace has passed (the clock of the body's reads, not of
	// its handler): slower, the read fails (408 request-timeout) and the connection is
	// closed. 0: no bound (the body read timeout, a minute, still holds).
	MinBodyRate   int64
	BodyRateGrace time.Duration
	// ContendedMinRate (bytes a second) and ContendedRateWindow: when a request is refused
	// for lack of IngestBodyBytes or RequestBodyBytes, the requests holding bytes of that
	// budget that wait on their clients (reading a body that has not all arrived, or writing
	// an answer the client does not take; not a handler at work) and moved fewer than
	// ContendedMinRate bytes a second over the last ContendedRateWindow or more (since they
	// began to hold, or since the last such look) are cut: the read or write fails, the
	// request is answered 503 when it still can be, its connection is closed and its bytes
	// given back. Without it, two clients each stalling a body of half the budget a byte
	// short, or each not taking a large answer, made every other request 503 for the minute
	// or two of the timeouts (hostile round 131); a request's age alone (cut past 10 s) cut
	// steady slow uploads and reads, which a hostile client could set off at will, and did
	// not cut holds re-opened every 9 s (hostile round 138). ContendedMinRate 0: never cut.
	ContendedMinRate    int64
	ContendedRateWindow time.Duration
	// ContendedWait is how long a request that finds RequestBodyBytes taken waits for the
	// bytes of its body before it is answered 503 (what a request loads does not wait: it is
	// in memory already; a body's later bytes wait when they can, bodyBudget.takeFor): requests
	// waiting take the bytes as they are given back, before new requests can, the smallest
	// first (bodyBudget.waitTurn); and a request holding more than a 64th of the budget may
	// take it up to three quarters only, a quarter kept for small requests (bodyBudget.limit). Answered 503 at once, a victim's requests lost the race
	// for the freed bytes to their holders' next ones: two clients asking for an unread 12 MB
	// export every 4.5 s kept 99.4 % of a victim's requests out (hostile round 139). A client
	// has at most maxWaitingPerClient requests waiting. Event batches (IngestBodyBytes) are
	// answered 503 ingest-busy at once, their back-pressure. 0: no wait.
	ContendedWait time.Duration
	// MaxBodiesPerClient is how many request bodies one identity (rateKey) sends at once,
	// each counted from its headers until it has arrived (or its request is answered); more
	// are answered 429 too-many-bodies. 0: no bound.
	MaxBodiesPerClient int
	// WriteRate is in stored writes per second (the requests Config's router audits that are
	// not GETs: saves, imports, archives, deploys, cancels, deploy requests, approvals and
	// rejections, test cases, tokens); WriteBurst is the bucket's size. 0: no limit.
	WriteRate  float64
	WriteBurst int
	// WriteBytesRate is in bytes per second of those requests' bodies; WriteBytesBurst is the
	// bucket's size. A body is taken from the bucket by its Content-Length before it is read
	// (a body larger than the bucket takes it whole, when it is full); a body without one
	// (chunked) as it arrives, failing when its bytes are not there. 0: no limit.
	WriteBytesRate  float64
	WriteBytesBurst int
	// Now is the clock the buckets refill by. Nil means time.Now.
	Now func() time.Time
}

// DefaultRateLimits returns the defaults.
func DefaultRateLimits() RateLimits {
	return RateLimits{IngestRate: DefaultIngestRate, IngestBurst: DefaultIngestBurst,
		TestRate: DefaultTestRate, TestBurst: DefaultTestBurst, MaxConcurrentTests: DefaultMaxConcurrentTests, MaxConcurrentValidations: DefaultMaxConcurrentValidations,
		ContendedWait: DefaultContendedWait,
		MaxStreams:    DefaultMaxStreams, MaxStreamsPerClient: DefaultMaxStreamsPerClient, IngestBodyBytes: DefaultIngestBodyBytes,
		RequestBodyBytes: DefaultRequestBodyBytes, MinBodyRate: DefaultMinBodyRate, BodyRateGrace: DefaultBodyRateGrace,
		ContendedMinRate: DefaultContendedMinRate, ContendedRateWindow: DefaultContendedRateWindow, MaxBodiesPerClient: DefaultMaxBodiesPerClient, WriteRate: DefaultWriteRate, WriteBurst: DefaultWriteBurst,
		WriteBytesRate: DefaultWriteBytesRate, WriteBytesBurst: DefaultWriteBytesBurst}
}

// buckets is a token bucket per key.
type buckets struct {
	limit    rate.Limit
	burst    int
	mu       sync.Mutex
	byKey    map[string]*rate.Limiter
	overflow *rate.Limiter
}

func newBuckets(perSecond float64, burst int) *buckets {
	if perSecond <= 0 {
		return nil
	}
	burst = max(burst, 1)
	return &buckets{limit: rate.Limit(perSecond), burst: burst, byKey: map[string]*rate.Limiter{},
		overflow: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// take takes a token of key's bucket at now, or returns how long until one is there.
func (b *buckets) take(key string, now time.Time) (time.Duration, bool) {
	_, wait, ok := b.takeN(key, 1, now)
	return wait, ok
}

// takeN takes n tokens (at most the bucket's size) of key's bucket at now, or, when they are
// not all there, none, and returns how long until they are. cancel gives them back.
func (b *buckets) takeN(key string, n int, now time.Time) (cancel func(), wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.bucket(key, now).ReserveN(now, min(max(n, 0), b.burst))
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, d, false
	}
	return func() { r.CancelAt(now) }, 0, true
}

// bucket is key's bucket, made when it has none (b.mu held).
func (b *buckets) bucket(key string, now time.Time) *rate.Limiter {
	lim, ok := b.byKey[key]
	if !ok {
		if len(b.byKey) >= maxRateKeys {
			b.dropFull(now)
		}
		if len(b.byKey) >= maxRateKeys {
			lim = b.overflow
		} else {
			lim = rate.NewLimiter(b.limit, b.burst)
			b.byKey[key] = lim
		}
	}
	return lim
}

// dropFull forgets the buckets that are full at now: a new bucket is the same.
func (b *buckets) dropFull(now time.Time) {
	for k, lim := range b.byKey {
		if lim.TokensAt(now) >= float64(b.burst) {
			delete(b.byKey, k)
		}
	}
}

// rateLimiter applies RateLimits.
type rateLimiter struct {
	ingest, test *buckets
	// writes and writeBytes are the stored writes' buckets (RateLimits.WriteRate,
	// WriteBytesRate; nil: no limit), storedWrite tells a stored write (nil: none is).
	writes, writeBytes *buckets
	storedWrite        func(r *http.Request) bool
	// running are the test runs' places: MaxConcurrentTests, half of them (at least 1) per
	// client; nil: no bound.
	running *places
	// deploying are the places of deploys' saved test cases, beside the test runs (a client
	// running test runs in every place would keep deploys from running theirs): as many, one
	// per client (one client's deploys, each running a slow saved test case, would keep the
	// others' out).
	deploying *places
	streams   *places // nil: no bound
	// bodies are the request bodies arriving, per client (MaxBodiesPerClient); nil: no bound.
	bodies *places
	// minBodyRate and bodyRateGrace: RateLimits.MinBodyRate (0: no bound) and BodyRateGrace.
	minBodyRate   int64
	bodyRateGrace time.Duration
	// ingest counts the bytes of event batches read (RateLimits.IngestBodyBytes), requests
	// those of the other bodies (RequestBodyBytes); nil: no bound.
	ingestBodies, requestBodies *bodyBudget
	now                         func() time.Time
	// bodyLimit is the most bytes of a request body to path (checkBody's limit): a test run's
	// body is read, up to it, before the run takes its place; nil: defaultBodyLimit.
	bodyLimit func(path string) int64
}

// defaultBodyLimit is bodyLimit when none is set (the default --max-body-bytes).
const defaultBodyLimit = 10 << 20

// newRateLimiter applies l.
func newRateLimiter(l RateLimits) *rateLimiter {
	rl := &rateLimiter{ingest: newBuckets(l.IngestRate, l.IngestBurst), test: newBuckets(l.TestRate, l.TestBurst),
		writes: newBuckets(l.WriteRate, l.WriteBurst), writeBytes: newBuckets(l.WriteBytesRate, l.WriteBytesBurst), now: l.Now}
	if l.MaxConcurrentTests > 0 {
		rl.running = testPlaces(l.MaxConcurrentTests, max(1, l.MaxConcurrentTests/2), "test runs")
		rl.deploying = testPlaces(l.MaxConcurrentTests, 1, "deploys running their saved test cases")
	}
	if l.MaxStreams > 0 || l.MaxStreamsPerClient > 0 {
		rl.streams = streamPlaces(l.MaxStreams, l.MaxStreamsPerClient)
	}
	if l.MaxBodiesPerClient > 0 {
		rl.bodies = bodyPlaces(l.MaxBodiesPerClient)
	}
	rl.minBodyRate, rl.bodyRateGrace = max(l.MinBodyRate, 0), max(l.BodyRateGrace, 0)
	rl.ingestBodies = newBodyBudget(l.IngestBodyBytes, errIngestBusy, "--ingest-body-bytes")
	rl.requestBodies = newBodyBudget(l.RequestBodyBytes, errRequestsBusy, "--request-body-bytes")
	for _, bb := range []*bodyBudget{rl.ingestBodies, rl.requestBodies} {
		if bb != nil && l.ContendedMinRate > 0 {
			bb.minRate, bb.window = l.ContendedMinRate, max(l.ContendedRateWindow, time.Second)
			bb.holds, bb.cutUntil = map[*requestHold]struct{}{}, map[string]time.Time{}
		}
	}
	if rl.requestBodies != nil && l.ContendedWait > 0 {
		rl.requestBodies.wait = l.ContendedWait
		rl.requestBodies.queue = map[string][]*budgetWaiter{}
	}
	if rl.now == nil {
		rl.now = time.Now
	}
	return rl
}

// rateKey is whom a request's bucket belongs to: its identity's Subject, or its client's
// address when there is no authentication (everyone is the same local user).
func rateKey(r *http.Request) string { return rateKeyOf(r.Context()) }

// rateKeyOf is rateKey of the request whose context ctx is.
func rateKeyOf(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok && id.Method != auth.MethodNone && id.Subject != "" {
		return "id:" + id.Subject
	}
	return "addr:" + addressKey(clientAddress(ctx))
}

// addressKey is a client address as the per-client limits count it: an IPv6 address by its
// /64, the block one host or one customer line usually has whole (RFC 6177), so that its
// 2^64 addresses count as one client, not as 2^64 quarters of a budget; an IPv4 address (or
// an IPv4 address mapped into IPv6) as itself.
func addressKey(a string) string {
	ip, err := netip.ParseAddr(a)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return a
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return a
	}
	return p.String()
}

// limit answers 429 rate-limited an event batch or a test run beyond its identity's rate,
// 503 test-runs-busy a test run beyond the concurrent bound (the server's, or its client's
// half of it), 503 ingest-busy an event batch
// beyond the bytes of batches read at once, 503 requests-busy another request beyond the
// bytes of the other bodies read at once, and 429 too-many-streams or 503 streams-busy a
// server-sent event stream beyond its identity's or the server's bound; other requests pass.
func (rl *rateLimiter) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			// No body, but the stored versions the request loads are counted (holdLoaded).
			if rl.streams != nil && isStreamPath(r.URL.Path) {
				rl.streams.serve(w, r, "5", func() { rl.requestBodies.serve(w, r, next) })
				return
			}
			rl.requestBodies.serve(w, r, next)
			return
		}
		if hasBody(r) && (rl.bodies != nil || rl.minBodyRate > 0) {
			arrived, ok := rl.guardBody(w, r)
			if !ok {
				return
			}
			defer arrived()
		}
		if (rl.writes != nil || rl.writeBytes != nil) && rl.storedWrite != nil && rl.storedWrite(r) {
			if !rl.admitWrite(w, r) {
				return
			}
		}
		if r.Method != http.MethodPost {
			rl.requestBodies.serve(w, r, next)
			return
		}
		var b *buckets
		budget := rl.requestBodies
		// A run of a scenario's saved test cases (POST .../tests/run, up to 100 cases) counts
		// as a test run too, for the rate and for the concurrent bound.
		testRun := isTestPath(r.URL.Path) || isRunSavedTestsPath(r.URL.Path)
		switch {
		case testRun:
			b = rl.test
		case isEventsPath(r.URL.Path):
			b, budget = rl.ingest, rl.ingestBodies
		}
		if b != nil {
			if wait, ok := b.take(rateKey(r), rl.now()); !ok {
				w.Header().Set("Retry-After", retryAfter(wait))
				what := "event batches"
				if testRun {
					what = "test runs"
				}
				writeProblem(w, problemf(http.StatusTooManyRequests, CodeRateLimited,
					"too many %s: %g a second (bursts of %d) are allowed; retry in %v", what, float64(b.limit), b.burst, wait.Round(time.Millisecond)))
				return
			}
		}
		// A node test runs a node's expressions on given variables: each evaluation within the
		// expression budgets (about a second at most), but several at once from one client
		// took the server's CPU (round 12: 40 at once). It takes a test run's place, not its
		// rate (the designer tests nodes as the user edits them).
		if (testRun || r.URL.Path == nodeTestPath) && rl.running != nil {
			budget.serve(w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The body first (counted by the budget as it arrives), then the place: a body
				// sent a byte at a time held a place for the 60 s of its read timeout, and 4
				// such connections kept every other test run out, again and again (round 14b).
				// A body that fails or passes its limit goes on without a place, to be refused.
				limit := int64(defaultBodyLimit)
				if rl.bodyLimit != nil {
					limit = rl.bodyLimit(r.URL.Path)
				}
				if !bufferBody(r, limit) {
					next.ServeHTTP(w, r)
					return
				}
				rl.running.serve(w, r, "1", func() { next.ServeHTTP(w, r) })
			}))
			return
		}
		budget.serve(w, r, next)
	})
}

// admitWrite takes a stored write's tokens from its identity's buckets: one write, and its
// body's Content-Length in bytes (a body larger than the bucket: all of it, when it is full),
// answering 429 rate-limited (with Retry-After) when they are not there. A body without a
// Content-Length (chunked) takes its bytes as they arrive (writeBytesBody): a read whose
// bytes are not there fails, and readBody answers 429 rate-limited.
func (rl *rateLimiter) admitWrite(w http.ResponseWriter, r *http.Request) bool {
	key, now := rateKey(r), rl.now()
	refuse := func(wait time.Duration, detail string, args ...any) {
		w.Header().Set("Retry-After", retryAfter(wait))
		if hasBody(r) {
			// Its body is not read: the connection is closed rather than read on.
			w.Header().Set("Connection", "close")
		}
		writeProblem(w, problemf(http.StatusTooManyRequests, CodeRateLimited, detail+"; retry in %v",
			append(args, wait.Round(time.Millisecond))...))
	}
	giveBack := func() {}
	if rl.writes != nil {
		cancel, wait, ok := rl.writes.takeN(key, 1, now)
		if !ok {
			refuse(wait, "too many stored writes (saves, imports, deploys, deploy requests, test cases, tokens): %g a second (bursts of %d) are allowed",
				float64(rl.writes.limit), rl.writes.burst)
			return false
		}
		giveBack = cancel
	}
	if rl.writeBytes != nil {
		declared := int(min(max(r.ContentLength, 0), int64(rl.writeBytes.burst)))
		_, wait, ok := rl.writeBytes.takeN(key, declared, now)
		if !ok {
			giveBack()
			refuse(wait, "too many bytes in stored writes: %g bytes a second (bursts of %d) are allowed, and this body is %d",
				float64(rl.writeBytes.limit), rl.writeBytes.burst, max(r.ContentLength, 0))
			return false
		}
		if r.ContentLength < 0 && hasBody(r) {
			r.Body = &writeBytesBody{ReadCloser: r.Body, rl: rl, key: key}
		}
	}
	return true
}

// writeBytesBody is a stored write's body without a Content-Length: each read takes its bytes
// from the identity's bytes bucket, and fails with a *writeBytesError when they are not there
// (a chunked body larger than the bucket never passes: send its Content-Length).
type writeBytesBody struct {
	io.ReadCloser
	rl  *rateLimiter
	key string
	err error
}

func (b *writeBytesBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		if _, wait, ok := b.rl.writeBytes.takeN(b.key, n, b.rl.now()); !ok || n > b.rl.writeBytes.burst {
			b.err = &writeBytesError{wait: wait, rate: float64(b.rl.writeBytes.limit), burst: b.rl.writeBytes.burst}
			return 0, b.err
		}
	}
	return n, err
}

// writeBytesError is a chunked stored write's body whose bytes were not in its identity's
// bytes bucket as they arrived: answered 429 rate-limited, Retry-After wait.
type writeBytesError struct {
	wait  time.Duration
	rate  float64
	burst int
}

func (e *writeBytesError) Error() string {
	return fmt.Sprintf("too many bytes in stored writes: %g bytes a second (bursts of %d) are allowed, and this body (chunked, without a Content-Length) passed them as it arrived; retry in %v",
		e.rate, e.burst, e.wait.Round(time.Millisecond))
}

// hasBody reports whether r has a body to read: a Content-Length above 0, or a chunked one.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// guardBody takes a place among the bodies r's client is sending (rl.bodies), answering 429
// too-many-bodies when there is none, and gives r a body that must arrive at rl.minBodyRate
// (minRateBody). arrived gives the place back: when the body has been read to its end or
// failed, or at the latest when r is answered (the caller defers it).
func (rl *rateLimiter) guardBody(w http.ResponseWriter, r *http.Request) (arrived func(), ok bool) {
	arrived = func() {}
	if rl.bodies != nil {
		key := rateKey(r)
		if p := rl.bodies.take(key); p != nil {
			w.Header().Set("Retry-After", "1")
			// Its body is not read: the connection is closed rather than read on (drainDeadline).
			w.Header().Set("Connection", "close")
			writeProblem(w, p)
			return nil, false
		}
		arrived = sync.OnceFunc(func() { rl.bodies.give(key) })
	}
	// The start by the connection's clock (its deadlines), not the buckets' (RateLimits.Now).
	r.Body = &minRateBody{ReadCloser: r.Body, w: w, rc: http.NewResponseController(w), start: time.Now(), rate: rl.minBodyRate,
		grace: rl.bodyRateGrace, arrived: arrived}
	return arrived, true
}

// bodyPlaces are the places of request bodies arriving: 429 too-many-bodies past perClient.
func bodyPlaces(perClient int) *places {
	return &places{perClient: perClient, byKey: map[string]int{},
		clientFull: func() *ProblemDetails {
			return problemf(http.StatusTooManyRequests, CodeTooManyBodies,
				"you are sending %d request bodies at once, as many as one client may; retry when one has arrived", perClient)
		}}
}

// minRateBody is a request body that must arrive at rate bytes a second on average, from
// start, once grace has passed (0: any rate), and within bodyReadTimeout of start: before each
// read it sets the connection's read deadline to the time by which the bytes read so far would
// be too few, start + grace + read/rate (Kestrel's MinRequestBodyDataRate checks the same
// average). A read past it fails with a *slowBodyError (past bodyReadTimeout, with the
// connection's timeout), and the connection is closed after the answer. At the body's end the
// deadline is cleared: the handler may run longer (see register). arrived is called at the
// end or at the first error.
type minRateBody struct {
	io.ReadCloser
	w       http.ResponseWriter // the body is read by its handler, in its goroutine
	rc      *http.ResponseController
	start   time.Time
	rate    int64
	grace   time.Duration
	read    int64
	arrived func()
	err     error // the first error of a read, returned again after
}

func (b *minRateBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	end := b.start.Add(bodyReadTimeout)
	if b.rate > 0 {
		if secs := float64(b.read) / float64(b.rate); secs < bodyReadTimeout.Seconds() { // no overflow
			if by := b.start.Add(b.grace + time.Duration(secs*float64(time.Second))); by.Before(end) {
				end = by
			}
		}
	}
	_ = b.rc.SetReadDeadline(end)
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == nil {
		return n, nil
	}
	b.err = err
	b.arrived()
	var ne net.Error
	switch {
	case err == io.EOF:
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.As(err, &ne) && ne.Timeout():
		if b.rate > 0 && end.Before(b.start.Add(bodyReadTimeout)) {
			b.err = &slowBodyError{rate: b.rate, grace: b.grace}
		}
		// The answer closes the connection: net/http would otherwise read on what is left of
		// the body (up to 256 KiB, within drainDeadline's 2 s) before it sends the answer.
		b.w.Header().Set("Connection", "close")
	}
	return n, b.err
}

// slowBodyError is a request body that arrived slower than its minimum rate (minRateBody): a
// timeout, answered 408 request-timeout.
type slowBodyError struct {
	rate  int64
	grace time.Duration
}

func (e *slowBodyError) Error() string {
	return fmt.Sprintf("the request body arrived slower than %d bytes a second (on average, after its first %v)", e.rate, e.grace)
}
func (e *slowBodyError) Timeout() bool   { return true }
func (e *slowBodyError) Temporary() bool { return false }

// bufferBody reads r's body, up to limit+1 bytes, and gives r a body that reads the same
// bytes again, then what the first read met (the rest past the limit, or its error); it
// reports whether the whole body was read, within limit.
func bufferBody(r *http.Request, limit int64) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	rest := io.Reader(r.Body)
	if err != nil {
		rest = failedReader{err}
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), rest), r.Body}
	return err == nil && int64(len(data)) <= limit
}

// failedReader returns err.
type failedReader struct{ err error }

func (f failedReader) Read([]byte) (int, error) { return 0, f.err }

// testPlaces are places for test runs (what: "test runs"), all of them over all clients and
// perClient for one; refused with 503 test-runs-busy.
func testPlaces(all, perClient int, what string) *places {
	return &places{most: all, perClient: perClient, byKey: map[string]int{},
		clientFull: func() *ProblemDetails {
			return problemf(http.StatusServiceUnavailable, CodeTestRunsBusy,
				"you have %d %s, as many as one client has at once (of the server's %d); retry when one has ended", perClient, what, all)
		},
		serverFull: func() *ProblemDetails {
			return problemf(http.StatusServiceUnavailable, CodeTestRunsBusy,
				"the server has %d %s, as many as it has at once; retry in a second", all, what)
		}}
}

// retryAfter is d in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// errIngestBusy is a batch's body read past the ingest budget (RateLimits.IngestBodyBytes),
// errRequestsBusy another request's body read past RateLimits.RequestBodyBytes: the answer is
// 503 ingest-busy or requests-busy (humaProblem).
var (
	errIngestBusy   = errors.New("ingest-busy")
	errRequestsBusy = errors.New("requests-busy")
)

// bodyBudget is the bytes of request bodies held read and being handled at once, and of the
// stored versions requests have loaded, over all clients: each body's bytes are taken as
// they are read (budgetedBody), a version's once loaded (holdLoaded), and given back when
// the request is answered. A read past the budget fails with busy.
//
// One client (rateKey) holds at most a quarter of it, but for a request it sends alone, which
// may hold up to half (mostOne): bodies held open by one client (8 connections declaring
// 10 MiB, sending 8 and then nothing) kept every other client's scenarios, deploys and
// batches out until the body read timeout; and when a request alone could hold all of it, a
// viewer reading a 10 MB version without taking the answer, or an upload stalled a byte
// short, made every other request 503 for up to 2 minutes, again and again (hostile round
// 125). A body larger than half is refused whatever the others hold (errTooLarge): 413
// body-too-large, before it is read when it declares its length. What a request loads is
// counted up to half (requestHold.take), so that stored data larger than that is still
// served, one such request at a time. When a request is refused for lack of the budget, the
// requests holding bytes of it that wait on their clients too slowly are cut (cutStalled):
// shares only raised the bar from one client to two. With a wait (RateLimits.ContendedWait),
// a request's body's bytes wait their turn (waitTurn) before busy.
type bodyBudget struct {
	size  int64
	most  int64 // mostOne
	busy  error
	flag  string // the option that sets size, for errTooLarge's message
	mu    sync.Mutex
	held  map[string]int64 // per client
	total int64            // held, all clients
	// minRate and window are RateLimits.ContendedMinRate and ContendedRateWindow (minRate
	// 0: no cut); holds are the requests holding bytes (requestHold).
	minRate  int64
	window   time.Duration
	holds    map[*requestHold]struct{}
	cutUntil map[string]time.Time // clients cut, until when they hold a 64th (penalize)
	// penHeld is what the clients in cutUntil hold in all: at most a quarter of the budget
	// (penaltyPool). strikes counts each client's cuts, and when the last was (penalize).
	penHeld int64
	strikes map[string]strike
	// wait is RateLimits.ContendedWait (0: none); queue holds the requests waiting, per
	// client in their order (waitTurn), inQueue how many in all; seq numbers them as they come.
	wait    time.Duration
	queue   map[string][]*budgetWaiter
	inQueue int
	seq     uint64
	// waitGauge, when set, counts the requests waiting (scenario_server_requests_waiting),
	// and cuts those cut (cutStalled; scenario_server_requests_cut_total).
	waitGauge prometheus.Gauge
	cuts      prometheus.Counter
}

// budgetWaiter is a request waiting for n bytes of a bodyBudget (bodyBudget.wait), holding
// mine already (a body's later bytes); ready is closed when they are granted (granted set,
// under the budget's mu), or when it is refused to make room for an older request holding
// bytes (refused set, the waiter out of the queue: makeRoomHolding).
type budgetWaiter struct {
	hold             *requestHold
	n, mine          int64
	seq              uint64
	ready            chan struct{}
	granted, refused bool
}

// maxWaitingPerClient is how many requests of one client wait for bytes of a budget at once
// (RateLimits.ContendedWait), and maxWaiting how many of all clients; more are answered 503
// at once (500 addresses each with 8 waiting made 2,453 waiting, 4,931 goroutines and 617 MiB:
// hostile round 142).
const (
	maxWaitingPerClient = 8
	maxWaiting          = 256
)

// newBodyBudget returns a budget of size bytes, or nil (no bound) when size is not positive.
func newBodyBudget(size int64, busy error, flag string) *bodyBudget {
	if size <= 0 {
		return nil
	}
	return &bodyBudget{size: size, most: size / 2, busy: busy, flag: flag, held: map[string]int64{}}
}

// mostOne is the most bytes one request (and one client) may hold: half the budget (the
// results streams' page buffer, which has its own turns, all of it).
func (bb *bodyBudget) mostOne() int64 { return bb.most }

// tooLarge is the error of a body larger than mostOne.
func (bb *bodyBudget) tooLarge() error {
	return &errTooLarge{most: bb.mostOne(), size: bb.size, flag: bb.flag}
}

// errTooLarge is a request body larger than one request may hold of its budget
// (bodyBudget.mostOne): it is refused whatever the others hold, 413 body-too-large.
type errTooLarge struct {
	most, size int64
	flag       string
}

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("the request body is larger than %d bytes, the most of one request this server holds at once (half of %s, %d bytes; a larger %s takes it)", e.most, e.flag, e.size, e.flag)
}

// problem is e's answer, 413 body-too-large.
func (e *errTooLarge) problem() *ProblemDetails {
	return problemf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "%s", e.Error())
}

// serve serves r with its body, and the stored versions it loads (holdLoaded), counted
// against bb (a nil bb counts nothing), until it is answered.
func (bb *bodyBudget) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if bb == nil {
		next.ServeHTTP(w, r)
		return
	}
	if r.ContentLength > bb.mostOne() {
		w.Header().Set("Connection", "close") // the body is not read
		writeProblem(w, bb.tooLarge().(*errTooLarge).problem())
		return
	}
	h := &requestHold{budget: bb, w: w, client: rateKey(r), ctx: r.Context()}
	h.ackedFrom.Store(ackedUnset)
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		// (HTTP/2's streams share their connection: what its peer acknowledged may be
		// another stream's, so progress counts no more than the stream wrote.)
		h.conn = c
	}
	r = r.WithContext(context.WithValue(r.Context(), requestHoldKey{}, h))
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &budgetedBody{ReadCloser: r.Body, hold: h}
	}
	defer h.release()
	if bb.minRate > 0 {
		h.writer = holdWriter{ResponseWriter: w, hold: h}
		w = &h.writer
	}
	next.ServeHTTP(w, r)
}

// take takes n more bytes for a request of client that holds mine already, and returns nil
// when it could: unless anyClient, within half the budget for the request (past it
// errTooLarge; requestHold.take asks for no more than that but for a body) and within the
// client's quarter unless the request is the client's only one; and within the budget
// (busy).
func (bb *bodyBudget) take(client string, mine, n int64, anyClient bool) error {
	return bb.takeFor(nil, client, mine, n, anyClient, false)
}

// takeFor is take for the request holding h (nil: none, a results stream's page): past the
// budget, the requests too slow on their clients are cut (cutStalled), and, when mayWait, a
// request's bytes of its body wait their turn (waitTurn) when the budget has a wait.
// What a request loads does not wait: it is in memory already, and would be held uncounted
// while it waited (review 144: clients each waiting with half the budget loaded).
//
// A body's later bytes wait too, holding those read before, unless an older request (one
// that asked for its first bytes before it) waits holding bytes; and a request that comes to
// wait so refuses the younger ones waiting so, as many as the bytes it lacks
// (makeRoomHolding). Answered 503 at once, a body larger than a quarter never passed a client
// holding half (a viewer's comparisons one after another, each loading half): its first bytes
// fitted, and its later ones were refused at once, 10 saves in 10 of 4.8 MB in a budget of
// 9.6 MiB (hostile report, cmpbig). When later bytes waited whenever the requests waiting so
// fitted in three quarters together, a request that had waited its turn for its first bytes
// waited in vain for its later ones beside a client's next request, come after it and waiting
// holding its own, while a third client's stalled body held the rest
// (TestRequestsWaitTheirTurn).
func (bb *bodyBudget) takeFor(h *requestHold, client string, mine, n int64, anyClient, mayWait bool) error {
	bb.mu.Lock()
	if h != nil && h.order == 0 {
		bb.seq++
		h.order = bb.seq
	}
	others := bb.held[client] - mine + bb.waiting(client)
	if !anyClient {
		if mine+n > bb.mostOne() {
			bb.mu.Unlock()
			return bb.tooLarge()
		}
		if others > 0 && others+mine+n > bb.size/4 {
			bb.mu.Unlock()
			return bb.busy
		}
		if until, ok := bb.cutUntil[client]; ok {
			switch {
			case !time.Now().Before(until):
				bb.forgive(client)
			case others+mine+n > bb.size/penaltyShare || bb.penHeld+n > bb.size/penaltyPool:
				bb.mu.Unlock()
				return &errPenalized{busy: bb.busy, until: until, most: bb.size / penaltyShare, flag: bb.flag}
			}
		}
	}
	// (No request waiting fits: bytes given back go to them first, grantWaiting.)
	if bb.total+n <= bb.limit(mine+n) {
		bb.grant(h, client, n)
		bb.mu.Unlock()
		return nil
	}
	bb.cutStalled(h)
	wait := mayWait && !anyClient && h != nil && bb.wait > 0
	if !wait || len(bb.queue[client]) >= maxWaitingPerClient || bb.inQueue >= maxWaiting ||
		mine > 0 && !bb.makeRoomHolding(h, mine, n) {
		bb.mu.Unlock()
		return bb.busy
	}
	return bb.waitTurn(h, mine, n) // unlocks
}

// makeRoomHolding reports whether the request of h, holding mine bytes, may wait for n more
// (bb.mu held), by wound-wait, the database systems' rule against deadlock (Rosenkrantz,
// Stearns and Lewis, 1978): a younger request (a larger requestHold.order) never waits holding
// bytes while an older one does, and an older one refuses, the youngest first, as many of the
// younger ones waiting holding bytes as the bytes it lacks (what they give back when answered
// 503, then goes to the requests waiting, grantWaiting). Two requests waiting holding bytes
// could otherwise each wait for the other's, until their waits ended.
func (bb *bodyBudget) makeRoomHolding(h *requestHold, mine, n int64) bool {
	var younger []*budgetWaiter
	for _, q := range bb.queue {
		for _, w := range q {
			if w.mine == 0 {
				continue
			}
			if w.hold.order < h.order {
				return false
			}
			younger = append(younger, w)
		}
	}
	lack := bb.total + n - bb.limit(mine+n)
	slices.SortFunc(younger, func(a, b *budgetWaiter) int { return cmp.Compare(b.hold.order, a.hold.order) })
	for _, w := range younger {
		if lack <= 0 {
			break
		}
		lack -= w.mine
		bb.leaveQueue(w)
		w.refused = true
		close(w.ready) // waitTurn answers busy
	}
	return true
}

// limit is how many bytes of the budget may be held in all once a request holds n: with a
// wait (RateLimits.ContendedWait), a request holding more than a 64th of the budget (a large
// load or body) may take it up to three quarters only, so that a quarter is always there for
// the small requests (a scenario, a validation, a page of results), whatever large ones hold
// or wait for: rotating addresses each asking for an unread export of half the budget every
// second held it all, and kept every other request waiting in vain (hostile round 142).
// Without a wait, all of it.
func (bb *bodyBudget) limit(n int64) int64 {
	if bb.wait > 0 && n > bb.size/64 {
		return bb.size - bb.size/4
	}
	return bb.size
}

// grant counts n bytes as client's, held by the request of h (nil: none).
func (bb *bodyBudget) grant(h *requestHold, client string, n int64) {
	bb.held[client] += n
	bb.total += n
	if _, ok := bb.cutUntil[client]; ok {
		bb.penHeld += n
	}
	if h != nil && bb.holds != nil {
		if _, ok := bb.holds[h]; !ok {
			bb.holds[h] = struct{}{}
			h.markAt, h.markMoved = time.Now(), h.progress()
		}
	}
}

// waiting is how many bytes client's requests wait for (bb.mu held).
func (bb *bodyBudget) waiting(client string) int64 {
	var n int64
	for _, w := range bb.queue[client] {
		n += w.n
	}
	return n
}

// waitTurn makes the request of h, holding mine, wait, up to bb.wait and while its context
// lasts, for n more bytes, and returns nil once they are granted, or busy. bb.mu is held, and
// unlocked. The bytes given back go to the requests waiting as they are given back, before any
// new request can take them (grantWaiting): the smallest first, each client's in their order,
// but those holding bytes before its others (they give them back sooner). Every
// second of the wait, it looks again for holds too slow on their clients (cutStalled): one
// that was too young to cut at the first look may be cut later.
func (bb *bodyBudget) waitTurn(h *requestHold, mine, n int64) error {
	bb.seq++
	w := &budgetWaiter{hold: h, n: n, mine: mine, seq: bb.seq, ready: make(chan struct{})}
	q := bb.queue[h.client]
	i := len(q)
	if mine > 0 {
		for i > 0 && q[i-1].mine == 0 {
			i--
		}
	}
	bb.queue[h.client] = append(q[:i:i], append([]*budgetWaiter{w}, q[i:]...)...)
	bb.inQueue++
	bb.mu.Unlock()
	if bb.waitGauge != nil {
		bb.waitGauge.Inc()
		defer bb.waitGauge.Dec()
	}
	deadline := time.NewTimer(bb.wait)
	defer deadline.Stop()
	look := time.NewTicker(time.Second)
	defer look.Stop()
	for {
		select {
		case <-w.ready:
			if w.refused { // for an older request (makeRoomHolding)
				return bb.busy
			}
			return nil
		case <-look.C:
			bb.mu.Lock()
			if !w.granted {
				bb.cutStalled(h)
			}
			bb.mu.Unlock()
			continue
		case <-deadline.C:
		case <-h.ctx.Done():
		}
		bb.mu.Lock()
		defer bb.mu.Unlock()
		if w.granted {
			return nil
		}
		if w.refused {
			return bb.busy
		}
		bb.leaveQueue(w)
		bb.grantWaiting() // the first of its client's may have held others back
		return bb.busy
	}
}

// leaveQueue takes w out of its client's queue (bb.mu held).
func (bb *bodyBudget) leaveQueue(w *budgetWaiter) {
	bb.inQueue--
	c := w.hold.client
	q := bb.queue[c]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		bb.queue[c] = q
	} else {
		delete(bb.queue, c)
	}
}

// grantWaiting grants the requests waiting that fit (bb.mu held), the smallest first (then
// the one that came first), each client's in their order: what is given back goes to the
// small requests of the designer before a large load that would take it all. In the order
// they came, a stream of large requests from new addresses, each taking half the budget, kept
// every small request behind them (hostile round 142); a large request waiting at the head
// held back every small one though they fitted. A large request passed over waits for its
// bytes until its wait ends, as it was answered 503 at once before there was a wait.
func (bb *bodyBudget) grantWaiting() {
	for {
		var next *budgetWaiter
		for _, q := range bb.queue {
			w := q[0]
			if bb.total+w.n > bb.limit(w.n) {
				continue
			}
			if next == nil || w.n < next.n || w.n == next.n && w.seq < next.seq {
				next = w
			}
		}
		if next == nil {
			return
		}
		bb.inQueue--
		c := next.hold.client
		if q := bb.queue[c][1:]; len(q) > 0 {
			bb.queue[c] = q
		} else {
			delete(bb.queue, c)
		}
		bb.grant(next.hold, c, next.n)
		next.granted = true
		close(next.ready)
	}
}

// cutStalled cuts the requests holding bytes of bb, but asking (the request refused), that
// wait on their clients now, reading their bodies or writing their answers (a request whose
// handler is working, a test run for instance, is not cut), and moved fewer than minRate
// bytes a second since their mark, window or more ago (their first bytes, or the last look
// that found them fast enough): the connection's deadline of that read or write is set to
// now, so that it fails at once (again at the next refusal, should the body's own read
// deadline have been set after it). bb.mu is held: a request gives its bytes back, and leaves
// holds, before its handler returns, so no deadline is set on a connection after.
func (bb *bodyBudget) cutStalled(asking *requestHold) {
	if bb.minRate <= 0 {
		return
	}
	now := time.Now()
	for h := range bb.holds {
		elapsed := now.Sub(h.markAt)
		if h == asking || elapsed < bb.window {
			continue
		}
		moved := h.progress()
		fast := float64(moved-h.markMoved) >= float64(bb.minRate)*elapsed.Seconds()
		reading, writing := h.reading.Load() > 0, h.writing.Load() > 0
		if fast || (!reading && !writing) {
			h.markAt, h.markMoved = now, moved
			continue
		}
		h.cut.Store(true)
		if bb.cuts != nil {
			bb.cuts.Inc()
		}
		rc := http.NewResponseController(h.w)
		if reading {
			_ = rc.SetReadDeadline(now)
		}
		if writing {
			_ = rc.SetWriteDeadline(now)
		}
		bb.penalize(h.client, now)
	}
}

// penalize keeps client, whose request was cut at now, to a 64th of the budget
// (penaltyShare) for cutPenalty: without it the client took the budget back within 50 ms of
// the cut, before the requests refused tried again, and every one of a victim's requests
// failed (hostile round 139). A client is cut only when it is slow, so a steady one is never
// penalized. At most maxRateKeys clients are remembered (the expired are dropped first).
func (bb *bodyBudget) penalize(client string, now time.Time) {
	_, was := bb.cutUntil[client]
	if !was && len(bb.cutUntil) >= maxRateKeys {
		for c, until := range bb.cutUntil {
			if now.After(until) {
				bb.forgive(c)
			}
		}
		if len(bb.cutUntil) >= maxRateKeys {
			return
		}
	}
	if !was {
		bb.penHeld += bb.held[client]
	}
	bb.cutUntil[client] = now.Add(bb.strike(client, now))
}

// strike is a client's cuts in a row (each within strikeMemory of the one before), and when
// the last was.
type strike struct {
	n    int
	last time.Time
}

// strikeMemory is how long a cut counts for the next one's penalty.
const strikeMemory = time.Hour

// strike counts a cut of client at now and returns its penalty: cutPenalty, doubled for each
// cut in a row before it (also while penalized: a client keeps the 64th it may hold, and was
// cut again every 10 s, its minute starting again, never doubled; round 150), up to 16
// times. Its other holds cut in the same look (at the same now) count no new strike. A minute alike for all, 64 addresses stalling bodies
// took the budget back each time their penalties ended together, and 2 MB uploads were
// refused for 40 s of each 80 (hostile round 149). At most maxRateKeys clients are remembered
// (those cut longest ago are forgotten first: all of them past strikeMemory).
func (bb *bodyBudget) strike(client string, now time.Time) time.Duration {
	if bb.strikes == nil {
		bb.strikes = map[string]strike{}
	}
	s, ok := bb.strikes[client]
	if !ok && len(bb.strikes) >= maxRateKeys {
		for c, x := range bb.strikes {
			if now.Sub(x.last) > strikeMemory {
				delete(bb.strikes, c)
			}
		}
	}
	if ok && now.Sub(s.last) > strikeMemory {
		s = strike{}
	}
	if s.n == 0 || !s.last.Equal(now) {
		s.n++
	}
	s.last = now
	if ok || len(bb.strikes) < maxRateKeys {
		bb.strikes[client] = s
	}
	return cutPenalty << min(s.n-1, 4)
}

// forgive ends client's penalty (bb.mu held).
func (bb *bodyBudget) forgive(client string) {
	bb.penHeld -= bb.held[client]
	delete(bb.cutUntil, client)
}

// cutPenalty is how long a client cut for holding its budget too slowly holds at most a
// penaltyShare-th of it: a 64th, a small request's (bodyBudget.limit), and the clients so
// cut a penaltyPool-th in all. Kept to a sixteenth each, 16 addresses each stalling 4 bodies
// just under a 64th, sent again when cut, held all of it, and left 1 % of a victim's 2 MB
// uploads through (hostile round 145); kept to a 64th each, 64 addresses did (0.3 %,
// hostile round 147).
const (
	cutPenalty   = time.Minute
	penaltyShare = 64
	penaltyPool  = 4
)

// holding is how many bytes client holds, and how many are free.
func (bb *bodyBudget) holding(client string) (held, free int64) {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	return bb.held[client], bb.size - bb.total
}

// give gives back n bytes of client's.
func (bb *bodyBudget) give(client string, n int64) { bb.giveFor(nil, client, n, 0) }

// giveFor is give for the request holding h, which holds left bytes after it (0: it leaves
// holds).
func (bb *bodyBudget) giveFor(h *requestHold, client string, n, left int64) {
	if n == 0 {
		return
	}
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if h != nil && left == 0 && bb.holds != nil {
		delete(bb.holds, h)
	}
	bb.total -= n
	if _, ok := bb.cutUntil[client]; ok {
		bb.penHeld -= n
	}
	if bb.held[client] -= n; bb.held[client] <= 0 {
		delete(bb.held, client)
	}
	if len(bb.queue) > 0 {
		bb.grantWaiting()
	}
}

// requestHold is what one request holds of its budget: the bytes of its body read so far
// (budgetedBody) and of the stored versions it has loaded (holdLoaded), given back when it
// is answered (bodyBudget.serve). It holds at most half the budget (bodyBudget.mostOne); a
// results stream's brief check of its sink (holdBriefly) may take up to all of it, and
// goes on without more past that.
type requestHold struct {
	budget *bodyBudget
	w      http.ResponseWriter
	client string          // rateKey
	ctx    context.Context // the request's: a wait for bytes ends with it (bodyBudget.waitTurn)
	// order numbers the requests as they first ask for bytes (under the budget's mu): an
	// older one waiting holding bytes makes the younger ones give way (makeRoomHolding).
	order uint64
	mu    sync.Mutex
	held  int64
	// read and written count the bytes of its body read and of its answer written; markAt
	// and markMoved are when bodyBudget.cutStalled last measured its rate from, and its
	// progress then (under the budget's mu). reading and writing count the reads of its body
	// and the writes of its answer in progress (waiting on the client); cut is set when
	// cutStalled cut it. writer is its answer's writer when holds may be cut.
	read, written    atomic.Int64
	markAt           time.Time
	markMoved        int64
	reading, writing atomic.Int32
	cut              atomic.Bool
	writer           holdWriter
	// conn is the request's connection (ConnContext; nil without it), and
	// ackedFrom what its peer had acknowledged when the answer began (ackedUnset before,
	// ackedUnknown when it could not be read then), for progress.
	conn      net.Conn
	ackedFrom atomic.Int64
}

// requestHold.ackedFrom before the answer's first write, and when the acknowledged bytes
// could not be read then (its progress is then what the kernel took, to its end).
const (
	ackedUnset   = -1
	ackedUnknown = -2
)

// progress is how many bytes of h's body were read and of its answer taken by its client:
// on TCP, the bytes its connection's peer acknowledged since the answer began (tcpAcked), no
// more than the answer wrote (over HTTP/2, the connection's other streams' bytes are
// acknowledged too: a stream its client stopped, its flow-control window closed, writes
// nothing more and is cut), and otherwise those the kernel took. What the kernel took moves
// in bursts as large as half its send buffer, several MB, which a client taking 40 to 150 KB a
// second empties in tens of seconds: nothing moved meanwhile, and such a client was cut as
// stalled (hostile rounds 145, and 147 over HTTP/2).
func (h *requestHold) progress() int64 {
	read, written := h.read.Load(), h.written.Load()
	from := h.ackedFrom.Load()
	if written == 0 || from < 0 {
		return read + written
	}
	acked, ok := tcpAcked(h.conn)
	if !ok {
		return read + written
	}
	return read + min(max(acked-from, 0), written)
}

// connKey is the context key of a request's connection (ConnContext).
type connKey struct{}

// ConnContext is the http.Server's ConnContext the API's handler expects (without it, what
// a request's client took of its answer is measured by what the kernel took): it keeps each
// request's connection in its context, so that a request holding bytes of the request budget
// is measured, when the budget is contended, by the bytes of its answer its client
// acknowledged.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// holdWriter counts the writes of a request's answer in progress (requestHold.writing).
type holdWriter struct {
	http.ResponseWriter
	hold *requestHold
}

func (w *holdWriter) Write(b []byte) (int, error) {
	w.hold.writing.Add(1)
	defer w.hold.writing.Add(-1)
	if w.hold.conn != nil && w.hold.ackedFrom.Load() == ackedUnset {
		// At the answer's first write only: set later, the bytes written before would count
		// as not taken, and a fast client could be cut.
		from := int64(ackedUnknown)
		if acked, ok := tcpAcked(w.hold.conn); ok {
			from = acked // (the connection's earlier answers were acknowledged before)
		}
		w.hold.ackedFrom.Store(from)
	}
	// In pieces, each counted as it goes out: huma writes an answer in one Write, and an
	// answer of 12 MB taken at 1 MB/s counted nothing for 12 s, and was cut as stalled
	// (hostile round 139).
	written := 0
	for len(b) > 0 {
		piece := b[:min(len(b), holdWritePiece)]
		n, err := w.ResponseWriter.Write(piece)
		written += n
		w.hold.written.Add(int64(n))
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// holdWritePiece is the most bytes of an answer holdWriter writes at once.
const holdWritePiece = 32 << 10

// Unwrap lets http.ResponseController reach the connection's writer (Flush, deadlines).
func (w *holdWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errPenalized is a request of a client cut (bodyBudget.penalize) asking for more than a
// 64th of the budget before its penalty is over: 503 with the budget's busy code.
type errPenalized struct {
	busy  error
	until time.Time
	most  int64
	flag  string
}

func (e *errPenalized) Error() string {
	return fmt.Sprintf("a request of yours was cut for holding bytes of the server's %s budget while sending or taking them too slowly as other requests were refused; until %s your requests hold at most %d bytes of it, and all clients cut so a quarter of it",
		e.flag, e.until.UTC().Format(time.RFC3339), e.most)
}

func (e *errPenalized) Unwrap() error { return e.busy }

// errHoldCut is the read of a request body that bodyBudget.cutStalled cut.
type errHoldCut struct {
	busy    error
	minRate int64
	window  time.Duration
	flag    string
}

func (e *errHoldCut) Error() string {
	return fmt.Sprintf("this request was cut: its body arrived slower than %d bytes a second over %v while it held bytes of the server's %s budget and other requests were refused for lack of it; send it again",
		e.minRate, e.window, e.flag)
}

func (e *errHoldCut) Unwrap() error { return e.busy }

type requestHoldKey struct{}

// holdKind is what a requestHold takes bytes for.
type holdKind int

const (
	holdBody  holdKind = iota // a body's bytes: past half the budget, errTooLarge
	holdLoad                  // a stored version's, page's or test cases': up to half, then none
	holdBrief                 // holdBriefly's: up to the whole budget, then none; any client's share
)

// take takes n more bytes (bodyBudget.take) and returns how many it took, or why it could
// not: the budget's busy error (the answer will say Retry-After 1), or errTooLarge for a body
// past half the budget. What a request loads is counted up to half the budget (all of it for
// holdBrief), and the request goes on without more past it: stored data larger than that
// (a version saved when the budget was larger, a dead letter of a few MB, test cases of up to
// 64 MiB) is still served, one such request at a time, never holding more than half.
func (h *requestHold) take(n int64, kind holdKind) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	more := n
	switch kind {
	case holdLoad:
		more = min(h.held+n, h.budget.mostOne()) - h.held
	case holdBrief:
		more = min(h.held+n, h.budget.size) - h.held
	}
	if more <= 0 {
		return 0, nil
	}
	if err := h.budget.takeFor(h, h.client, h.held, more, kind == holdBrief, kind == holdBody); err != nil {
		var pen *errPenalized
		switch {
		case err == h.budget.busy:
			h.w.Header().Set("Retry-After", "1")
		case errors.As(err, &pen):
			h.w.Header().Set("Retry-After", retryAfter(time.Until(pen.until)))
		}
		return 0, err
	}
	h.held += more
	return more, nil
}

// give gives back n of the bytes taken.
func (h *requestHold) give(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n = min(n, h.held)
	h.budget.giveFor(h, h.client, n, h.held-n)
	h.held -= n
}

// release gives back all the request holds, when it is answered.
func (h *requestHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.budget.giveFor(h, h.client, h.held, 0)
	h.held = 0
}

// holdLoaded counts n bytes of stored versions the request of ctx has loaded (a version's
// stored graph, the same measure as a body's bytes: comparing two versions decodes both, and
// answering one encodes it again) against its budget until it is answered; past the budget
// it returns 503 requests-busy. A request the rate limiter does not count (no budget) is not
// counted.
//
// The bytes are counted once loaded: the store's copy is in memory already, but a request
// refused lets it go at once instead of holding it, and its copies, while it is handled.
// Without it, 16 comparisons at once of two 9.7 MB versions by one client held 1.32 GB.
func holdLoaded(ctx context.Context, n int) error {
	h, _ := ctx.Value(requestHoldKey{}).(*requestHold)
	if h == nil {
		return nil
	}
	if _, err := h.take(int64(n), holdLoad); err != nil {
		return errLoadBusy(err)
	}
	return nil
}

// holdBriefly is holdLoaded for a version the request lets go before it is answered and
// reads briefly (a results stream checks its sink in a version, then streams for hours):
// release gives its bytes back. It counts against the whole budget only, not the client's
// quarter: the designer opening a large deployed scenario reads it and opens a stream per
// collect sink at once, and a stream refused waits seconds before it tries again.
func holdBriefly(ctx context.Context, n int) (release func(), err error) {
	h, _ := ctx.Value(requestHoldKey{}).(*requestHold)
	if h == nil {
		return func() {}, nil
	}
	took, err := h.take(int64(n), holdBrief)
	if err != nil {
		return nil, errLoadBusy(err)
	}
	return func() { h.give(took) }, nil
}

// errLoadBusy is the answer to a load that requestHold.take refused with err: the budget is
// busy (a load never passes half the budget: it is counted up to it), or the client was cut
// (errPenalized).
func errLoadBusy(err error) error {
	var pen *errPenalized
	if errors.As(err, &pen) {
		return problemf(http.StatusServiceUnavailable, CodeRequestsBusy, "%s", pen.Error())
	}
	return problemf(http.StatusServiceUnavailable, CodeRequestsBusy,
		"the server is handling as many bytes of request bodies and stored versions as it takes at once; retry in a second")
}

// budgetedBody takes a request body's bytes from its request's hold as they are read: a
// client that declares 10 MiB and sends a byte a second holds a byte a second, and a body
// sent without Content-Length counts what it sends. A read past the budget fails with the
// budget's busy error.
type budgetedBody struct {
	io.ReadCloser
	hold    *requestHold
	refused error
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	if b.refused != nil {
		return 0, b.refused
	}
	if b.hold.cut.Load() {
		return 0, b.cut()
	}
	b.hold.reading.Add(1)
	n, err := b.ReadCloser.Read(p)
	b.hold.read.Add(int64(n))
	b.hold.reading.Add(-1)
	if err != nil && b.hold.cut.Load() {
		return n, b.cut()
	}
	if n > 0 {
		if _, terr := b.hold.take(int64(n), holdBody); terr != nil {
			b.refused = terr
			return n, terr
		}
	}
	return n, err
}

// cut is the error of every read once the request is cut (bodyBudget.cutStalled); the
// connection is closed after the answer (its read deadline is past).
func (b *budgetedBody) cut() error {
	bb := b.hold.budget
	b.refused = &errHoldCut{busy: bb.busy, minRate: bb.minRate, window: bb.window, flag: bb.flag}
	b.hold.w.Header().Set("Connection", "close")
	return b.refused
}

// places counts what is open (streams, test runs), in all and per client (rateKey), and
// refuses past most in all or perClient for one client (0: no bound).
type places struct {
	mu                     sync.Mutex
	open                   int
	byKey                  map[string]int
	most, perClient        int
	clientFull, serverFull func() *ProblemDetails // why take refuses
}

// streamPlaces are the server-sent event streams' places: 429 too-many-streams past
// perClient, 503 streams-busy past most.
func streamPlaces(most, perClient int) *places {
	return &places{most: most, perClient: perClient, byKey: map[string]int{},
		clientFull: func() *ProblemDetails {
			return problemf(http.StatusTooManyRequests, CodeTooManyStreams,
				"you have %d streams open, as many as one client may; close one, or retry later", perClient)
		},
		serverFull: func() *ProblemDetails {
			return problemf(http.StatusServiceUnavailable, CodeStreamsBusy,
				"the server has %d streams open, as many as it serves at once; retry later", most)
		}}
}

// take takes a place for key, or returns why it cannot.
func (s *places) take(key string) *ProblemDetails {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perClient > 0 && s.byKey[key] >= s.perClient {
		return s.clientFull()
	}
	if s.most > 0 && s.open >= s.most {
		return s.serverFull()
	}
	s.open++
	s.byKey[key]++
	return nil
}

// serve runs f in a place of r's client (rateKey), or answers why there is none, with
// Retry-After retry (seconds).
func (s *places) serve(w http.ResponseWriter, r *http.Request, retry string, f func()) {
	key := rateKey(r)
	if p := s.take(key); p != nil {
		w.Header().Set("Retry-After", retry)
		writeProblem(w, p)
		return
	}
	defer s.give(key)
	f()
}

// give gives a place of key back.
func (s *places) give(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byKey[key]--; s.byKey[key] <= 0 {
		delete(s.byKey, key)
	}
}

// isStreamPath reports a server-sent event stream: /api/scenarios/{name}/counts/stream and
// /api/scenarios/{name}/sinks/{sinkId}/results/stream.
func isStreamPath(path string) bool {
	return strings.HasPrefix(path, "/api/scenarios/") &&
		(strings.HasSuffix(path, "/counts/stream") || strings.HasSuffix(path, "/results/stream"))
}
