package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scenario-server/scenario-server/store"
)

// readyTimeout bounds the store probe of /readyz.
const readyTimeout = 2 * time.Second

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status string `json:"status" enum:"ok" doc:"ok when healthy (ready); otherwise the answer is a 503 problem."`
}

type healthOutput struct {
	Body Health
}

func (h *handlers) registerHealth(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "healthz",
		Method:      http.MethodGet,
		Path:        "/healthz",
		Summary:     "Liveness",
		Description: "Answers 200 while the process serves HTTP.",
		Tags:        []string{tagOperations},
	}, func(context.Context, *struct{}) (*healthOutput, error) {
		return &healthOutput{Body: Health{Status: "ok"}}, nil
	})

	register(hapi, h, huma.Operation{
		OperationID: "readyz",
		Method:      http.MethodGet,
		Path:        "/readyz",
		Summary:     "Readiness",
		Description: "Answers 200 when the store can be read and written within 2 s (a read, then a one-row write), 503 otherwise: code not-ready, or store-full while the store's disk is full (its latest write failed that way).",
		Tags:        []string{tagOperations},
		Errors:      []int{http.StatusServiceUnavailable},
	}, h.ready)

	// At most MetricsScrapesInFlight scrapes at once, the others 503 at once: one scrape of
	// 200 deployed scenarios of 500 nodes (501,116 series) is 264 MB and 5 CPU-seconds, and 12
	// at once passed 4 GB (round 14).
	// And one a client (identity or address), so that a client scraping in a loop, twice at
	// once, does not keep the monitoring's scrapes out (round 26: 14 of 15 refused).
	metrics := promhttp.HandlerFor(h.metrics, promhttp.HandlerOpts{MaxRequestsInFlight: MetricsScrapesInFlight})
	scrapes := &places{perClient: 1, byKey: map[string]int{}, clientFull: func() *ProblemDetails {
		return problemf(http.StatusTooManyRequests, CodeRateLimited, "you have a /metrics scrape running, as many as one client has at once; retry when it has ended")
	}}
	register(hapi, h, huma.Operation{
		OperationID: "metrics",
		Method:      http.MethodGet,
		Path:        "/metrics",
		Summary:     "Prometheus metrics",
		Description: "Metrics in the Prometheus text format: HTTP requests by route pattern and status (scenario_server_http_requests_total), their durations (scenario_server_http_request_duration_seconds), and the Go runtime and process. At most 2 scrapes run at once, another answered 503 at once, and 1 of one identity (or client address), another answered 429.",
		Tags:        []string{tagOperations},
		Errors:      []int{http.StatusTooManyRequests, http.StatusServiceUnavailable},
		Responses: map[string]*huma.Response{"200": {
			Description: "Metrics in the Prometheus exposition format.",
			Content:     map[string]*huma.MediaType{"text/plain": {Schema: &huma.Schema{Type: huma.TypeString}}},
		}},
	}, func(context.Context, *struct{}) (*huma.StreamResponse, error) {
		return &huma.StreamResponse{Body: func(ctx huma.Context) {
			r, w := humachi.Unwrap(ctx)
			scrapes.serve(w, r, "1", func() { metrics.ServeHTTP(w, r) })
		}}, nil
	})
}

func (h *handlers) ready(ctx context.Context, _ *struct{}) (*healthOutput, error) {
	err := h.probe.ping(ctx, h.store)
	if err != nil {
		loggerFrom(ctx).Warn("not ready: store probe failed", "error", err)
		if errors.Is(err, store.ErrStoreFull) {
			return nil, huma.ErrorWithHeaders(newProblem(http.StatusServiceUnavailable, CodeStoreFull,
				"the store's disk is full: writes fail"), http.Header{"Retry-After": {storeFullRetryAfter}})
		}
		if errors.Is(err, errProbeStalled) {
			return nil, newProblem(http.StatusServiceUnavailable, CodeNotReady, fmt.Sprintf("the store did not answer within %v (a read and a one-row write)", readyTimeout))
		}
		return nil, newProblem(http.StatusServiceUnavailable, CodeNotReady, "the store cannot be read and written")
	}
	return &healthOutput{Body: Health{Status: "ok"}}, nil
}

// errProbeStalled is storeProbe's error when the store has not answered within readyTimeout.
var errProbeStalled = errors.New("the store probe did not return in time")

// storeProbe runs the store's probe for /readyz, one at a time: a probe asked for while one
// runs waits for that one. Each waits at most readyTimeout, whether or not the store returns
// by then: SQLite's probe waits behind a write stuck in fsync whatever its context (a frozen
// disk held /readyz for 45.9 s), and probes piling up behind it would each hold a goroutine.
type storeProbe struct {
	mu      sync.Mutex
	running *probeRun
}

// probeRun is one call of the store's probe: err is set before done closes.
type probeRun struct {
	done chan struct{}
	err  error
}

func (p *storeProbe) ping(ctx context.Context, st store.Store) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	p.mu.Lock()
	run := p.running
	if run == nil {
		run = &probeRun{done: make(chan struct{})}
		p.running = run
		go func() {
			pctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			defer cancel()
			run.err = st.Ping(pctx)
			p.mu.Lock()
			p.running = nil
			p.mu.Unlock()
			close(run.done)
		}()
	}
	p.mu.Unlock()
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return errProbeStalled
	}
}

// MetricsScrapesInFlight is the most /metrics scrapes served at once (a Prometheus pair of
// high availability scrapes twice); promhttp answers the others 503.
const MetricsScrapesInFlight = 2
