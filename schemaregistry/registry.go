// Package schemaregistry is the server's client of a Confluent-compatible schema registry
// (franz-go's pkg/sr): it decodes Kafka record values in the registry's wire format (a zero
// magic byte, a 4-byte big-endian schema id, the payload) to JSON, gives the JSON Schema of a
// subject's latest schema (Avro schemas translated) so that a Kafka source's #input is
// typed, and encodes values against a subject's latest schema for a Kafka sink.
//
// Lookups are bounded: each request has a timeout (Timeout), schemas by id are cached for
// good (an id never changes its schema), and a subject's latest schema is cached for
// LatestTTL.
package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/singleflight"

	"github.com/scenario-server/scenario-server/internal/names"
)

// Defaults of the lookups' bounds.
const (
	// Timeout bounds one request to the registry.
	Timeout = 5 * time.Second
	// LatestTTL is how long a subject's latest schema is reused before it is asked again,
	// and a lookup the registry refused (a 4xx, a schema not supported) is not asked again.
	LatestTTL = 30 * time.Second
	// UnreachableTTL is how long a lookup that could not reach the registry (no answer
	// within Timeout, a 5xx, the requests at once all busy: IsUnreachable) is not asked
	// again: what waits on it (a Kafka source's records, a Kafka sink's deployment) goes on
	// within this of the registry's return.
	UnreachableTTL = 2 * time.Second
	// maxCachedIDs bounds the schemas kept by id, and the subjects' latest schemas kept;
	// past it a cache starts again. maxCachedBytes bounds the bytes each cache's schemas hold
	// (schema.size) likewise: 40 schemas of 709 KB by id held 736 MB.
	maxCachedIDs   = 10_000
	maxCachedBytes = 64 << 20
	// maxAsking bounds the requests to the registry at once (Registry.asking).
	maxAsking = 4
	// maxErrorText bounds the registry's text kept in an error (a message, or the schema a
	// parser quotes): an answer of 8 MiB quoted whole in each of a validation's warnings made
	// answers of 109 MB and the server 2.6 GB.
	maxErrorText = 512
	// MaxAnswerBytes bounds one answer of the registry: reading past it fails the lookup. (A
	// registry streaming an endless answer ran the server to 1.2 GB within the timeout.) The
	// largest schemas registries are set to keep are around a megabyte.
	MaxAnswerBytes = 8 << 20
)

// cappedTransport reads at most MaxAnswerBytes of each answer's body (http.MaxBytesReader:
// past it the read fails with an *http.MaxBytesError).
type cappedTransport struct{ next http.RoundTripper }

func (c cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		resp.Body = http.MaxBytesReader(nil, resp.Body, MaxAnswerBytes)
	}
	return resp, err
}

// Config is how the server reaches the registry. The zero value (no URL) is no registry.
type Config struct {
	// URL is the registry's base URL, http:// or https://.
	URL string
	// User and Password are the optional basic-auth credentials. Password is a secret:
	// LogValue and the errors never show it.
	User, Password string
}

// LogValue shows the settings without the password.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("url", c.URL)}
	if c.User != "" {
		attrs = append(attrs, slog.String("user", c.User))
	}
	return slog.GroupValue(attrs...)
}

// Registry is a client of one registry, safe for concurrent use.
type Registry struct {
	cl  *sr.Client
	now func() time.Time

	// asking holds a place for each request to the registry: at most maxAsking at once, so
	// that answers of up to MaxAnswerBytes being parsed stay within a bound.
	asking chan struct{}
	// lookups merges concurrent lookups of one id or subject into one request
	// (golang.org/x/sync/singleflight): validations of many editors at once asked the
	// registry for the same subject each.
	lookups singleflight.Group

	mu     sync.Mutex
	byID   map[int]*schema
	latest map[string]latestEntry
	// byIDBytes and latestBytes are the sizes (schema.size) of the schemas in byID and in
	// latest.
	byIDBytes, latestBytes int
	// failedID remembers, for LatestTTL, the ids whose lookup failed, so that a registry
	// that is down is not asked once per record.
	failedID map[int]latestEntry
}

type latestEntry struct {
	s     *schema
	id    int
	err   error
	gotAt time.Time
}

// New checks cfg and returns its client, or nil without a URL. It does not contact the
// registry: a registry that is down only leaves #input untyped and records undecodable
// until it is back.
func New(cfg Config) (*Registry, error) {
	if cfg.URL == "" {
		if cfg.User != "" || cfg.Password != "" {
			return nil, errors.New("schema registry: a user or password is set but no registry URL")
		}
		return nil, nil
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("schema registry URL %q: %w", cfg.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("schema registry URL %q: want http://host[:port][/path] or https://host[:port][/path]", cfg.URL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("schema registry URL %q: give the credentials with the user flag and the password variable, not in the URL", u.Redacted())
	}
	if (cfg.User == "") != (cfg.Password == "") {
		return nil, errors.New("schema registry: basic auth needs both a user and a password")
	}
	opts := []sr.ClientOpt{sr.URLs(strings.TrimRight(cfg.URL, "/")), sr.HTTPClient(&http.Client{Timeout: Timeout, Transport: cappedTransport{next: http.DefaultTransport}}), sr.UserAgent("scenario-server")}
	if cfg.User != "" {
		opts = append(opts, sr.BasicAuth(cfg.User, cfg.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Registry{cl: cl, now: time.Now, asking: make(chan struct{}, maxAsking), byID: map[int]*schema{}, latest: map[string]latestEntry{}, failedID: map[int]latestEntry{}}, nil
}

// ValueSubject is the subject of a topic's record values (TopicNameStrategy).
func ValueSubject(topic string) string { return topic + "-value" }

// schemaByID is the schema of id, cached for good.
func (r *Registry) schemaByID(ctx context.Context, id int) (*schema, error) {
	now := r.now()
	if e, ok := r.cachedByID(id, now); ok {
		return e.s, e.err
	}
	res := r.lookups.DoChan("id\x00"+strconv.Itoa(id), func() (any, error) {
		return r.fetchByID(context.WithoutCancel(ctx), id, now)
	})
	select {
	case v := <-res:
		s, _ := v.Val.(*schema)
		return s, v.Err
	case <-ctx.Done():
		return nil, fmt.Errorf("schema registry: schema id %d: %w", id, ctx.Err())
	}
}

// fetchByID asks the registry for the schema of id (one caller at a time: schemaByID) and
// caches the answer, an error too, as schemaByID says; an answer cached since the caller
// looked (a lookup that ended meanwhile) is taken instead.
func (r *Registry) fetchByID(ctx context.Context, id int, now time.Time) (*schema, error) {
	if e, ok := r.cachedByID(id, now); ok {
		return e.s, e.err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var s *schema
	err := r.ask(ctx)
	if err == nil {
		var raw sr.Schema
		raw, err = r.cl.SchemaByID(ctx, id)
		if err = unreachable(err); err == nil {
			s, err = parseSchema(raw)
		}
		<-r.asking
	}
	err = shortError(err)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("schema registry: schema id %d: %w", id, err)
		if len(r.failedID) >= maxCachedIDs {
			clear(r.failedID)
		}
		r.failedID[id] = latestEntry{err: err, gotAt: now}
		return nil, err
	}
	if len(r.byID) >= maxCachedIDs || r.byIDBytes+s.size > maxCachedBytes {
		clear(r.byID)
		r.byIDBytes = 0
	}
	r.byID[id] = s
	r.byIDBytes += s.size
	delete(r.failedID, id)
	return s, nil
}

// cachedByID is the schema of id (e.s), or the error its lookup failed with within
// LatestTTL of now (e.err), and whether the cache had either.
func (r *Registry) cachedByID(id int, now time.Time) (e latestEntry, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.byID[id]; s != nil {
		return latestEntry{s: s}, true
	}
	if failed, ok := r.failedID[id]; ok && now.Sub(failed.gotAt) < failed.ttl() {
		return failed, true
	}
	return latestEntry{}, false
}

// latestSchema is the latest schema of subject and its id, asked again after LatestTTL
// (a failed lookup too, so a registry that is down is not asked on every validation). When
// asking again fails but the registry could not be reached (no answer, or a 5xx), the schema
// it gave before is kept: a registry that is down does not make a sink's values errors.
//
// Once a schema has been read, asking again does not wait: the schema read before is the
// answer while the registry is asked in the background (stale-while-revalidate, as HTTP
// caches do, RFC 5861), and the new answer serves the lookups after it. A registry that
// hangs no longer holds the caller (a deployment's loop, each LatestTTL) for up to Timeout.
func (r *Registry) latestSchema(ctx context.Context, subject string) (*schema, int, error) {
	now := r.now()
	r.mu.Lock()
	e, had := r.latest[subject]
	r.mu.Unlock()
	if had && now.Sub(e.gotAt) < e.ttl() {
		return e.s, e.id, e.err
	}
	res := r.lookups.DoChan("latest\x00"+subject, func() (any, error) {
		return r.fetchLatest(context.WithoutCancel(ctx), subject, now), nil
	})
	if had && e.s != nil {
		return e.s, e.id, nil // res, buffered, is dropped
	}
	select {
	case v := <-res:
		e := v.Val.(latestEntry)
		return e.s, e.id, e.err
	case <-ctx.Done():
		return nil, 0, fmt.Errorf("schema registry: the latest schema of subject %q: %w", subject, ctx.Err())
	}
}

// fetchLatest asks the registry for the latest schema of subject (one caller at a time:
// latestSchema) and caches the answer as latestSchema says; an entry cached since the caller
// looked (a lookup that ended meanwhile) is taken instead.
func (r *Registry) fetchLatest(ctx context.Context, subject string, now time.Time) latestEntry {
	if e, ok := r.cachedLatest(subject, now); ok {
		return e
	}
	r.mu.Lock()
	old := r.latest[subject] // kept when the registry cannot be reached
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	e := latestEntry{gotAt: now}
	err := r.ask(ctx)
	if err == nil {
		var ss sr.SubjectSchema
		ss, err = r.cl.SchemaByVersion(ctx, subject, -1)
		if err = unreachable(err); err == nil {
			e.s, err = parseSchema(ss.Schema)
			e.id = ss.ID
		}
		<-r.asking
	}
	err = shortError(err)
	if err != nil {
		if old.s != nil && IsUnreachable(err) {
			e = old
			e.gotAt = now
		} else {
			e.s, e.err = nil, fmt.Errorf("schema registry: the latest schema of subject %q: %w", subject, err)
		}
	}
	r.mu.Lock()
	if len(r.latest) >= maxCachedIDs || r.latestBytes+e.size() > maxCachedBytes {
		clear(r.latest)
		r.latestBytes = 0
	}
	r.latestBytes += e.size() - r.latest[subject].size()
	r.latest[subject] = e
	r.mu.Unlock()
	return e
}

// size is the size of e's schema (schema.size), 0 without one.
func (e latestEntry) size() int {
	if e.s == nil {
		return 0
	}
	return e.s.size
}

// cachedLatest is subject's cached entry and whether it is within LatestTTL of now.
func (r *Registry) cachedLatest(subject string, now time.Time) (latestEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.latest[subject]
	return e, ok && now.Sub(e.gotAt) < e.ttl()
}

// ttl is how long e is reused: UnreachableTTL for a lookup that could not reach the
// registry, LatestTTL otherwise.
func (e latestEntry) ttl() time.Duration {
	if e.s == nil && IsUnreachable(e.err) {
		return UnreachableTTL
	}
	return LatestTTL
}

// ask takes a place to ask the registry (Registry.asking), waiting up to ctx's end; not
// getting one is an UnreachableError.
func (r *Registry) ask(ctx context.Context) error {
	select {
	case r.asking <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &UnreachableError{fmt.Errorf("waited for one of the %d requests to the registry at once to end: %w", maxAsking, ctx.Err())}
	}
}

// UnreachableError is a lookup that did not get the registry's answer: no answer within
// Timeout (or the caller's deadline), a connection that failed, a 5xx, a 401, 403, 408 or
// 429, or no place among the requests at once. Asking again later may succeed, unlike
// another 4xx (no such subject or id) or a schema that is not supported.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string { return "the registry cannot be reached: " + e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable says whether err is, or wraps, an UnreachableError.
func IsUnreachable(err error) bool {
	var u *UnreachableError
	return errors.As(err, &u)
}

// unreachable is err of a request to the registry as an UnreachableError when it is one
// (anything but an answer below 500, or an answer too long to read); nil stays nil. Answers
// that say nothing of the schema asked for are unreachable too, to ask again: 401 and 403
// (the registry did not take the credentials: they may be put right, and until then the
// records wait rather than becoming dead letters), 408 and 429 (slow down).
func unreachable(err error) error {
	var re *sr.ResponseError
	var tooLong *http.MaxBytesError
	if err == nil || errors.As(err, &re) && re.StatusCode < 500 && !askAgain(re.StatusCode) || errors.As(err, &tooLong) {
		return err
	}
	return &UnreachableError{err}
}

// askAgain says whether an answer of status code below 500 is worth asking again for.
func askAgain(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	}
	return false
}

// shortError is err with at most maxErrorText bytes of its text: the registry's answer
// (sr.ResponseError, kept as such with its text cut) or a parser's error quoting the schema.
func shortError(err error) error {
	if err == nil || len(err.Error()) <= maxErrorText {
		return err
	}
	if u := (*UnreachableError)(nil); errors.As(err, &u) {
		return &UnreachableError{shortError(u.Err)}
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		c := *re
		c.Message, c.Raw = names.Cut(c.Message, maxErrorText), []byte(names.Cut(string(c.Raw), maxErrorText))
		return &c
	}
	return errors.New(names.Cut(err.Error(), maxErrorText))
}

// IsSubjectNotFound says whether err is the registry's answer that a subject has no schema.
func IsSubjectNotFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.ErrorCode == sr.ErrSubjectNotFound.Code
}
