package api

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// CodeNULCharacter (400): a text field or query parameter holds the NUL character (U+0000),
// which the store cannot keep (PostgreSQL's text refuses it).
const CodeNULCharacter = "nul-character"

// refuseNUL answers 400 nul-character to a request whose query or JSON body holds U+0000 (as
// the JSON escape \u0000), before any handler acts on it: PostgreSQL refuses the character in
// text, so a comment with it would fail half-way (a cancel that stopped the deployment but
// could not record it). Event batches and test runs are exempt: events are stored as bytes and
// may hold any JSON. The body was bounded by checkBody before; it is read here and handed on.
func refuseNUL(limitOf func(path string) int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.RawQuery, "%00") || strings.ContainsRune(r.URL.RawQuery, 0) {
				writeProblem(w, newProblem(http.StatusBadRequest, CodeNULCharacter, "a query parameter holds the NUL character (%00), which the server does not keep"))
				return
			}
			if r.Body == nil || r.Body == http.NoBody || isEventsPath(r.URL.Path) || isTestPath(r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			body, p := readBody(w, r, limitOf(r.URL.Path))
			if p != nil {
				writeProblem(w, p)
				return
			}
			if !utf8.Valid(body) {
				// JSON is UTF-8 (RFC 8259); decoded, the invalid bytes would become U+FFFD
				// silently (a node id the client did not send).
				writeProblem(w, newProblem(http.StatusBadRequest, CodeBadRequest, "the request body is not valid UTF-8"))
				return
			}
			if hasJSONNUL(body) {
				writeProblem(w, newProblem(http.StatusBadRequest, CodeNULCharacter, `a text field holds the NUL character (\u0000), which the server does not keep`))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	}
}

// hasJSONNUL reports whether the JSON text b holds U+0000: a raw NUL byte, or the escape
// \u0000 (not a literal backslash followed by "u0000", which is written \\u0000).
func hasJSONNUL(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`u0000`))
		if j < 0 {
			return false
		}
		at := i + j
		slashes := 0
		for k := at - 1; k >= 0 && b[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 1 {
			return true
		}
		i = at + 1
	}
}

// readBody reads r's body, at most limit bytes (more: 413 body-too-large) within
// bodyReadTimeout (408 past it), and leaves no read deadline on the connection after it: the
// handler may take longer than that (see register).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *ProblemDetails) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		if errors.Is(err, errRequestsBusy) || errors.Is(err, errIngestBusy) || errors.As(err, new(*errTooLarge)) {
			return nil, humaProblem(nil, http.StatusInternalServerError, "", []error{err})
		}
		var wb *writeBytesError
		if errors.As(err, &wb) {
			w.Header().Set("Retry-After", retryAfter(wb.wait))
			w.Header().Set("Connection", "close") // the rest of the body is not read
			return nil, problemf(http.StatusTooManyRequests, CodeRateLimited, "%s", wb.Error())
		}
		var slow *slowBodyError
		if errors.As(err, &slow) {
			return nil, problemf(http.StatusRequestTimeout, CodeRequestTimeout, "%s", slow.Error())
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, problemf(http.StatusRequestTimeout, CodeRequestTimeout, "the request body did not arrive within %v", bodyReadTimeout)
		}
		return nil, problemf(http.StatusBadRequest, CodeBadRequest, "reading the request body: %v", err)
	}
	if int64(len(body)) > limit {
		return nil, problemf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "the request body is larger than %d bytes", limit)
	}
	return body, nil
}

// drainTimeout is how long the server reads, after a handler, the part of the request body
// the handler left unread (drainDeadline).
const drainTimeout = 2 * time.Second

// DefaultAnswerWriteTimeout is the default of Config.AnswerWriteTimeout: 2 minutes, a 58 MB
// answer (the largest the server writes: a scenario's saved test cases) at 0.5 MB/s.
const DefaultAnswerWriteTimeout = 2 * time.Minute

// answerDeadline gives the client of every request but a stream (which has its own deadline
// per event, Config.StreamWriteTimeout) timeout to take the answer, from its first byte; the
// time the handler takes before does not count. Past it the write fails, the handler returns
// and the connection is closed. Without it, a client that sent a GET and never read held its
// answer, its goroutine and its request budget until it closed: 150 such connections held
// 1 GB of results pages. The deadline is cleared when a request begins: the connection's last
// request may have set it.
func answerDeadline(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isStreamPath(r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			rc := http.NewResponseController(w)
			_ = rc.SetWriteDeadline(time.Time{})
			next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, timeout: timeout}, r)
		})
	}
}

// deadlineWriter sets its connection's write deadline at its answer's first byte.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	set     bool
}

func (d *deadlineWriter) start() {
	if !d.set {
		d.set = true
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	}
}

func (d *deadlineWriter) WriteHeader(code int) {
	d.start()
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.start()
	return d.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// drainDeadline gives the read of a request body's unread part after its handler a deadline.
// net/http reads up to 256 KiB of it before it writes the answer, to keep the connection
// (RFC 9112 §9.3), and the server has no read timeout (handlers may read long bodies, and
// streams run for hours): a GET that declares a body of 200,000 bytes and sends none was never
// answered, and held its connection, one of --max-connections, for good. Past the deadline
// the answer is written and the connection closed. An answer that closes the connection
// (Connection: close, as a body arriving too slowly gets: minRateBody) reads nothing more.
func drainDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			deadline := time.Now().Add(drainTimeout)
			if w.Header().Get("Connection") == "close" {
				deadline = time.Now()
			}
			_ = http.NewResponseController(w).SetReadDeadline(deadline)
		}()
		next.ServeHTTP(w, r)
	})
}
