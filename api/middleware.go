package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/internal/names"
)

// httpMetrics are the request metrics served at /metrics.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scenario_server_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scenario_server_http_request_duration_seconds",
			Help:    "Time from receiving an HTTP request to the end of its answer, by method and route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9), // 0.5 ms to 33 s
		}, []string{"method", "route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scenario_server_http_requests_in_flight",
			Help: "HTTP requests being answered.",
		}),
	}
	var err error
	m.requests, err = registerOrReuse(reg, m.requests)
	if err != nil {
		return nil, err
	}
	m.duration, err = registerOrReuse(reg, m.duration)
	if err != nil {
		return nil, err
	}
	m.inFlight, err = registerOrReuse(reg, m.inFlight)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// registerOrReuse registers c, or returns the collector already registered under its name
// (two handlers on one registry share their metrics).
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("registering HTTP metrics: %w", err)
	}
	return c, nil
}

// quietRoutes are logged at debug level: probes and scrapes come every few seconds.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// refusedLinesPerSecond is how many requests answered 401 (no or bad credentials) and how
// many answered 429 (rate limited) the request log writes a second, each; the line after
// those held back says how many (requests_not_logged). The metrics count every request.
// Unsampled, an anonymous flood of 1,850 requests a second wrote 337 KB of log a second.
const refusedLinesPerSecond = 10

// requestSubject is who a request came from, for its request log line: the authenticated
// identity's subject (noteSubject), "" without one. Only the request's goroutines write it,
// before the line is written.
type requestSubject struct{ subject string }

type requestSubjectKey struct{}

// noteSubject records the identity's subject for the request log line of ctx's request.
func noteSubject(ctx context.Context, subject string) {
	if who, ok := ctx.Value(requestSubjectKey{}).(*requestSubject); ok {
		who.subject = subject
	}
}

// requestLog gives each request a logger with its request id (see loggerFrom), then logs the
// request (with the authenticated identity's subject: who sent the events an ingestion took,
// say) and counts it in the metrics by route pattern, once it is answered; requests answered
// 401 or 429 are logged refusedLinesPerSecond a second.
func requestLog(log *slog.Logger, m *httpMetrics) func(http.Handler) http.Handler {
	sampled := map[int]*logSample{
		http.StatusUnauthorized:    {per: refusedLinesPerSecond},
		http.StatusTooManyRequests: {per: refusedLinesPerSecond},
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			reqLog := log.With("requestId", middleware.GetReqID(r.Context()))
			who := &requestSubject{}
			r = r.WithContext(context.WithValue(withLogger(r.Context(), reqLog), requestSubjectKey{}, who))
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			m.inFlight.Inc()
			defer m.inFlight.Dec()

			next.ServeHTTP(ww, r)

			elapsed := time.Since(start)
			route := "unmatched" // keeps the label set small whatever paths clients send
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			method := metricMethod(r.Method)
			m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
			m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())

			level := slog.LevelInfo
			if quietRoutes[route] && status < 400 {
				level = slog.LevelDebug
			}
			attrs := []slog.Attr{
				slog.String("client", clientAddress(r.Context())),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", elapsed),
			}
			if who.subject != "" {
				attrs = append(attrs, slog.String("subject", who.subject))
			}
			if s := sampled[status]; s != nil {
				ok, unlogged := s.take()
				if !ok {
					return
				}
				if unlogged > 0 {
					attrs = append(attrs, slog.Int("requests_not_logged", unlogged))
				}
			}
			reqLog.LogAttrs(r.Context(), level, "request", attrs...)
		})
	}
}

func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// recoverProblem answers a panic in a handler with a 500 problem and logs it with its stack,
// instead of dropping the connection.
func recoverProblem(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			loggerFrom(r.Context()).Error("panic in handler", "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
			writeProblem(w, newProblem(http.StatusInternalServerError, CodeInternal, "internal error; the server log has the cause"))
		}()
		next.ServeHTTP(w, r)
	})
}

// chunkedBody is a request body of unannounced length (chunked) whose read errors other than
// timeouts are the client's: a malformed chunk (a size that is not hex or overflows, a
// chunk line over 4 KiB, no CRLF after a chunk) answered 500 internal-error and an ERROR line
// each (a hostile round); humaProblem answers them 400 (malformedBody).
type chunkedBody struct{ io.ReadCloser }

func (b *chunkedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() { // huma answers a timeout 408 itself
			err = &malformedBody{err}
		}
	}
	return n, err
}

// malformedBody is a chunked body's read error (chunkedBody).
type malformedBody struct{ err error }

func (e *malformedBody) Error() string { return e.err.Error() }
func (e *malformedBody) Unwrap() error { return e.err }

// checkQuery refuses an API request whose query string is not valid percent-encoding, that
// gives a parameter twice, or that gives one its operation does not take (params: the query
// parameters by "METHOD pattern" of the API's operations, filled once they are registered; a
// route not in it, not an operation, is not checked): 400. A misspelt parameter was ignored
// before, and its request answered as if it had none (new-user round 136: "afer=2" listed
// every result, "serch=" every scenario).
func checkQuery(mux *chi.Mux, params map[string][]string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.RawQuery == "" || !strings.HasPrefix(r.URL.Path, "/api/") {
				next.ServeHTTP(w, r)
				return
			}
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				writeProblem(w, problemf(http.StatusBadRequest, CodeBadRequest, "the query string is not valid: %v", err))
				return
			}
			keys := slices.Sorted(maps.Keys(q))
			for _, k := range keys {
				if n := len(q[k]); n > 1 {
					writeProblem(w, problemf(http.StatusBadRequest, CodeBadRequest,
						"query parameter %q is given %d times; give it once", names.Cut(k, 100), n))
					return
				}
			}
			method, pattern, _ := findRoute(mux, r)
			if takes, ok := params[method+" "+pattern]; ok {
				for _, k := range keys {
					if !slices.Contains(takes, k) {
						what := "no query parameters"
						if len(takes) > 0 {
							what = "the query parameters " + strings.Join(takes, ", ")
						}
						writeProblem(w, problemf(http.StatusBadRequest, CodeBadRequest,
							"unknown query parameter %q: %s %s takes %s", names.Cut(k, 100), method, pattern, what))
						return
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// operationQueries returns the query parameters of doc's operations by "METHOD path" (the
// path as chi patterns write it, {name}), for checkQuery.
func operationQueries(doc *huma.OpenAPI, into map[string][]string) {
	for path, item := range doc.Paths {
		for method, op := range map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPost: item.Post,
			http.MethodPut: item.Put, http.MethodPatch: item.Patch, http.MethodDelete: item.Delete} {
			if op == nil {
				continue
			}
			takes := []string{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					takes = append(takes, p.Name)
				}
			}
			slices.Sort(takes)
			into[method+" "+path] = takes
		}
	}
}

// checkBody refuses, before anything reads it, a body that is announced longer than the
// limit of its path (413) or that is not application/json (415; events sent to an HTTP source
// may also be application/x-ndjson). Bodies of unannounced length are cut at the limit by
// each operation (huma's MaxBodyBytes).
func checkBody(limitOf func(path string) int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			limit := limitOf(r.URL.Path)
			if r.ContentLength > limit {
				writeProblem(w, problemf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
					"the request body is larger than %d bytes", limit))
				return
			}
			hasBody := r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
			if hasBody && r.ContentLength < 0 {
				r.Body = &chunkedBody{r.Body}
			}
			if hasBody {
				ct := r.Header.Get("Content-Type")
				mt, params, err := mime.ParseMediaType(ct)
				if err != nil || (mt != "application/json" && !(mt == ndjson && isEventsPath(r.URL.Path))) {
					if ct == "" {
						ct = "none"
					}
					writeProblem(w, problemf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
						"request bodies must be application/json (Content-Type: %s)", names.Cut(ct, 200)))
					return
				}
				// A body in another charset, or compressed, would be read as UTF-8 text (a gzip
				// body answered "not valid UTF-8", a br one was read as it came; a hostile round).
				if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
					writeProblem(w, problemf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
						"request bodies must be UTF-8 (charset %s)", names.Cut(cs, 100)))
					return
				}
				if enc := strings.TrimSpace(r.Header.Get("Content-Encoding")); enc != "" && !strings.EqualFold(enc, "identity") {
					writeProblem(w, problemf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
						"Content-Encoding %q is not supported: send the body uncompressed", names.Cut(enc, 100)))
					return
				}
				// As parsed (lower case): huma matches the media type as written, and answered
				// application/JSON 415 "validation failed".
				r.Header.Set("Content-Type", mt)
			}
			next.ServeHTTP(w, r)
		})
	}
}
