package api

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

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
	// (RateLimits.MaxConcurrentTests); Retry-After says when to try again.
	CodeTestRunsBusy = "test-runs-busy"
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
	// MaxConcurrentTests is how many test runs run at once, over all identities; more are
	// answered 503 test-runs-busy.
	MaxConcurrentTests int
	// Now is the clock the buckets refill by. Nil means time.Now.
	Now func() time.Time
}

// DefaultRateLimits returns the defaults.
func DefaultRateLimits() RateLimits {
	return RateLimits{IngestRate: DefaultIngestRate, IngestBurst: DefaultIngestBurst,
		TestRate: DefaultTestRate, TestBurst: DefaultTestBurst, MaxConcurrentTests: DefaultMaxConcurrentTests}
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
	b.mu.Lock()
	defer b.mu.Unlock()
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
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
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
	running      chan struct{} // one element per test run running; nil: no bound
	now          func() time.Time
}

func newRateLimiter(l RateLimits) *rateLimiter {
	rl := &rateLimiter{ingest: newBuckets(l.IngestRate, l.IngestBurst), test: newBuckets(l.TestRate, l.TestBurst), now: l.Now}
	if l.MaxConcurrentTests > 0 {
		rl.running = make(chan struct{}, l.MaxConcurrentTests)
	}
	if rl.now == nil {
		rl.now = time.Now
	}
	return rl
}

// rateKey is whom a request's bucket belongs to: its identity's Subject, or its client's
// address when there is no authentication (everyone is the same local user).
func rateKey(r *http.Request) string {
	if id, ok := auth.FromContext(r.Context()); ok && id.Method != auth.MethodNone && id.Subject != "" {
		return "id:" + id.Subject
	}
	return "addr:" + clientAddress(r.Context())
}

// limit answers 429 rate-limited an event batch or a test run beyond its identity's rate,
// and 503 test-runs-busy a test run beyond the concurrent bound; other requests pass.
func (rl *rateLimiter) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		var b *buckets
		// A run of a scenario's saved test cases (POST .../tests/run, up to 100 cases) counts
		// as a test run too, for the rate and for the concurrent bound.
		testRun := isTestPath(r.URL.Path) || isRunSavedTestsPath(r.URL.Path)
		switch {
		case testRun:
			b = rl.test
		case isEventsPath(r.URL.Path):
			b = rl.ingest
		default:
			next.ServeHTTP(w, r)
			return
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
		if testRun && rl.running != nil {
			select {
			case rl.running <- struct{}{}:
				defer func() { <-rl.running }()
			default:
				w.Header().Set("Retry-After", "1")
				writeProblem(w, problemf(http.StatusServiceUnavailable, CodeTestRunsBusy,
					"the server is running %d test runs, as many as it runs at once; retry in a second", cap(rl.running)))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// retryAfter is d in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
