package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/store"
)

// The actions of the audit log, by route ("METHOD pattern"). A request to one of these routes
// that reached the role check with an identity is recorded once, with its outcome: "ok" for an answer below
// 400, else the problem's code. Refusals by role (forbidden) are recorded too.
var auditActions = map[string]string{
	"POST /api/scenarios":                                     "scenario.create",
	"POST /api/scenarios/{name}/versions":                     "scenario.save",
	"POST /api/scenarios/{name}/import":                       "scenario.import",
	"POST /api/scenarios/{name}/archive":                      "scenario.archive",
	"POST /api/scenarios/{name}/unarchive":                    "scenario.unarchive",
	"POST /api/scenarios/{name}/deploy":                       "deploy",
	"POST /api/scenarios/{name}/cancel":                       "cancel",
	"POST /api/scenarios/{name}/deploy-requests":              "deploy.request",
	"PUT /api/scenarios/{name}/tests/{test}":                  "tests.save",
	"DELETE /api/scenarios/{name}/tests/{test}":               "tests.delete",
	"POST /api/scenarios/{name}/deploy-requests/{id}/approve": "deploy.approve",
	"POST /api/scenarios/{name}/deploy-requests/{id}/reject":  "deploy.reject",
	"GET /api/scenarios/{name}/sinks/{sinkId}/results":        "results.read",
	"GET /api/scenarios/{name}/sinks/{sinkId}/results/stream": "results.stream",
	"GET /api/audit":          "audit.read",
	"POST /api/tokens":        "token.create",
	"DELETE /api/tokens/{id}": "token.revoke",
	"DELETE /api/sessions":    "sessions.end",
}

// foldedActions are the actions a client may repeat in a loop (polling results, paging the
// log): the same request (identity, address, action, scenario, version and outcome) within
// auditFoldWindow of an entry's first is folded into that entry (store.AuditStore.FoldAudit),
// so that a loop adds an entry a minute, not one a request. Their answers 404 are recorded
// without the scenario (auditRoutes): a loop over names that do not exist folds too; so are
// reads of many scenarios past auditor.reads.
var foldedActions = map[string]bool{"results.read": true, "results.stream": true, "audit.read": true}

const auditFoldWindow = time.Minute

// maxAuditProblemBytes is how much of an error answer's body is kept to read its code.
const maxAuditProblemBytes = 8 << 10

type clientAddrKey struct{}

// clientAddress returns the client's address that withClientAddress found, or "".
func clientAddress(ctx context.Context) string {
	a, _ := ctx.Value(clientAddrKey{}).(string)
	return a
}

// withClientAddress puts the client's address in the request's context (clientAddress): the
// connection's peer, or, when the peer is one of trusted (a reverse proxy), the address the
// proxies recorded in X-Forwarded-For: the rightmost one that is not itself a trusted proxy.
// Without trusted proxies X-Forwarded-For is ignored: any client can write it.
func withClientAddress(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			addr := peerAddress(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), trusted)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientAddrKey{}, addr)))
		})
	}
}

// peerAddress is remote's IP address (remote itself when it has none), or the client that
// trusted proxies forwarded for.
func peerAddress(remote string, forwarded []string, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !isTrusted(ip, trusted) {
		return host
	}
	var hops []string
	for _, f := range forwarded {
		for _, h := range strings.Split(f, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop, ok := hopAddress(hops[i])
		if !ok {
			return host // a hop that is not an address: the chain cannot be trusted past it
		}
		if !isTrusted(hop, trusted) {
			return hop.String()
		}
		host = hop.String()
	}
	return host
}

// hopAddress reads an X-Forwarded-For hop: an address, with a port ("203.0.113.5:5555",
// "[2001:db8::5]:443", as some proxies write it) or in brackets ("[2001:db8::5]"). Read as an
// address alone, such a hop ended the chain, and every client behind the proxy shared the
// proxy's address, its limits and its audit entries.
func hopAddress(hop string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(hop); err == nil {
		return ip, true
	}
	if ap, err := netip.ParseAddrPort(hop); err == nil {
		return ap.Addr(), true
	}
	if strings.HasPrefix(hop, "[") && strings.HasSuffix(hop, "]") {
		if ip, err := netip.ParseAddr(hop[1 : len(hop)-1]); err == nil {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	ip = ip.Unmap()
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// auditNote is what a handler adds to its request's audit entry (noteAudit).
type auditNote struct {
	mu       sync.Mutex
	scenario string
	version  int
	target   string // store.AuditEntry.Target
	// write appends the request's entry with an outcome, once (later calls do nothing).
	write func(outcome string)
}

type auditNoteKey struct{}

// noteAudit records, for the request's audit entry, the scenario acted on (when the path
// does not name it: "" keeps the path's) and the version. It does nothing on a route that is
// not audited.
func noteAudit(ctx context.Context, scenario string, version int) {
	n, ok := ctx.Value(auditNoteKey{}).(*auditNote)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if scenario != "" {
		n.scenario = scenario
	}
	n.version = version
}

// noteTarget records, for the request's audit entry, what it acts on besides a scenario
// (store.AuditEntry.Target). It does nothing on a route that is not audited.
func noteTarget(ctx context.Context, target string) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok {
		n.mu.Lock()
		n.target = target
		n.mu.Unlock()
	}
}

// auditNow appends the request's audit entry at once with the outcome, instead of when the
// answer is written: for an action that is done (an approval committed) before the request's
// slower part, which a crash or a failure must not leave unrecorded. The entry is written once:
// the answer then adds none. It does nothing on a route that is not audited.
func auditNow(ctx context.Context, outcome string) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok && n.write != nil {
		n.write(outcome)
	}
}

// audit appends an audit entry for the request of ctx, for actions that are not a route of
// auditActions (see auditor.audit).
func (h *handlers) audit(ctx context.Context, action, scenario string, version int, outcome string) {
	(&auditor{store: h.store, now: time.Now}).audit(ctx, action, scenario, version, "", outcome)
}

// auditor writes the audit log.
type auditor struct {
	store store.AuditStore
	now   func() time.Time
	// refusals bounds the refusals by role (forbidden) and the other failed requests of
	// actions that do not fold stored per identity: an identity that may call nothing else,
	// or one sending invalid requests, could otherwise fill the log at the speed of its
	// requests. Those beyond it are in the request log only. Nil stores them all.
	refusals *buckets
	// reads bounds the new entries of folded actions that name a scenario, per identity (or
	// client address, rateKey): a loop over many scenarios' results made an entry for each
	// scenario a minute (round 26: one viewer, 52,000 scenarios, 1,500 entries a second).
	// Beyond it a read is recorded without the scenario, and folds with the others; the
	// request log has the path, by request id. Nil: no bound.
	reads *buckets
	// named remembers when the entries naming a scenario that reads made were made (by
	// foldKey), so that a read folding into one takes no token of reads.
	mu    sync.Mutex
	named map[string]time.Time
}

// maxNamedReads bounds auditor.named; when it is full it is forgotten whole (once each
// maxNamedReads entries, not a scan of it each read): a read forgotten so takes a token of
// reads again, and at worst is recorded without its scenario.
const maxNamedReads = 100_000

// New entries of folded actions naming a scenario, per identity: a burst of
// auditReadBurst, then auditReadRate a second (a dashboard polling 120 scenarios' results
// once a minute names each).
const (
	auditReadRate  = 2.0
	auditReadBurst = 120
)

// Refusals by role stored in the audit log per identity: a burst of auditRefusalBurst, then
// auditRefusalRate a second.
const (
	auditRefusalRate  = 1.0
	auditRefusalBurst = 30
)

// audit appends an entry for the request of ctx, outside the audited routes (token changes
// made through the API, say): the identity, the client's address and the request id come
// from ctx; outcome is "ok" or a problem's code. A failure to write is logged, not returned:
// the action happened.
func (a *auditor) audit(ctx context.Context, action, scenario string, version int, target, outcome string) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		id = auth.Identity{Name: "anonymous"}
	}
	address := clientAddress(ctx)
	if foldedActions[action] {
		// An IPv6 client by its /64, as the rate limits count it: a client has 2^64
		// addresses, and reads from each would be an entry each, never folded.
		address = addressKey(address)
	}
	e := store.AuditEntry{
		Time: a.now(), Subject: id.Subject, Name: id.Name, Address: address,
		Action: action, Scenario: escapeHidden(scenario), Version: version, Target: escapeHidden(target), Outcome: outcome,
		RequestID: middleware.GetReqID(ctx),
	}
	// The client going away does not skip the entry.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var err error
	if foldedActions[action] {
		since := e.Time.Add(-auditFoldWindow)
		if e.Scenario != "" && a.reads != nil && !a.folds(e, since) {
			if _, _, ok := a.reads.takeN(rateKeyOf(ctx), 1, e.Time); !ok {
				e.Scenario, e.Version = "", 0
			}
		}
		var in store.AuditEntry
		in, err = a.store.FoldAudit(wctx, e, since)
		if err == nil && e.Scenario != "" && a.reads != nil {
			a.remember(e, in.Time)
		}
	} else {
		_, err = a.store.AppendAudit(wctx, e)
	}
	if err != nil {
		loggerFrom(ctx).Error("writing the audit log", "action", action, "scenario", scenario, "error", err.Error())
	}
}

// foldKey is what FoldAudit matches an entry by.
func foldKey(e store.AuditEntry) string {
	return strings.Join([]string{e.Subject, e.Name, e.Address, e.Action, e.Scenario, strconv.Itoa(e.Version), e.Outcome}, "\x00")
}

// folds reports whether a named entry like e was made since: e folds into it.
func (a *auditor) folds(e store.AuditEntry, since time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.named[foldKey(e)]
	return ok && !at.Before(since)
}

// remember notes that the entry of e, naming a scenario, was made at (a.named).
func (a *auditor) remember(e store.AuditEntry, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.named == nil {
		a.named = map[string]time.Time{}
	}
	if len(a.named) >= maxNamedReads {
		clear(a.named)
	}
	a.named[foldKey(e)] = at
}

// auditRoutes records the requests to the routes of auditActions. It runs after
// authentication (the identity is known) and before the role check (refusals are recorded).
// A successful answer is recorded when its status is written, so that a stream of results
// is in the log while it runs; an error answer once its body (and code) is written.
func (a *auditor) auditRoutes(mux *chi.Mux) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The route as the role check finds it (a HEAD audited as its GET).
			method, pattern, rctx := findRoute(mux, r)
			action, ok := auditActions[method+" "+pattern]
			if _, signedIn := auth.FromContext(r.Context()); !ok || !signedIn {
				// Requests without an identity are refused with 401 and are in the request
				// log, not the store: anyone could fill the audit log with them.
				next.ServeHTTP(w, r)
				return
			}
			note := &auditNote{}
			if name := rctx.URLParam("name"); name != "" {
				if n, err := url.PathUnescape(name); err == nil {
					note.scenario = n
				}
			}
			ctx := context.WithValue(r.Context(), auditNoteKey{}, note)
			r = r.WithContext(ctx)
			rec := &auditRecorder{ResponseWriter: w, status: 0}
			var once sync.Once
			write := func(outcome string) {
				once.Do(func() {
					// Refusals by role, and failed requests (a 4xx or 5xx: nothing was done) of
					// actions that do not fold, share the identity's bucket: an editor sending
					// invalid scenarios in a loop added an entry a request (round 26).
					if outcome != "ok" && !foldedActions[action] && a.refusals != nil {
						id, _ := auth.FromContext(ctx)
						if _, ok := a.refusals.take(id.Subject, a.now()); !ok {
							loggerFrom(ctx).Warn("failed request not stored in the audit log: too many from this identity", "action", action, "outcome", outcome, "subject", id.Subject)
							return
						}
					}
					note.mu.Lock()
					scenario, version, target := note.scenario, note.version, note.target
					note.mu.Unlock()
					a.audit(ctx, action, scenario, version, target, outcome)
				})
			}
			note.write = write
			rec.onSuccess = func() { write("ok") }
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK
			}
			if rec.status < 400 {
				write("ok")
				return
			}
			if rec.status == http.StatusNotFound && foldedActions[action] {
				// A read of what does not exist is recorded without the name asked for:
				// reads of many names (a client probing, or one with a bad list) fold into
				// one entry a minute like reads of one name, instead of adding an entry each
				// (round 25: 250 a second). The request log has the path, by request id.
				note.mu.Lock()
				note.scenario, note.version = "", 0
				note.mu.Unlock()
			}
			write(problemCode(rec.status, rec.body.Bytes()))
		})
	}
}

// problemCode is the code of a problem+json answer, or the status's text for another body.
func problemCode(status int, body []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &p) == nil && p.Code != "" {
		return p.Code
	}
	return strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "-"))
}

// auditRecorder passes an answer through, calling onSuccess when a status below 400 is
// written, and keeping the start of an error answer's body.
type auditRecorder struct {
	http.ResponseWriter
	status    int
	body      bytes.Buffer
	onSuccess func()
}

func (r *auditRecorder) WriteHeader(status int) {
	if r.status == 0 && status >= 200 {
		r.status = status
		if status < 400 {
			r.onSuccess()
		}
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *auditRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if r.status >= 400 && r.body.Len() < maxAuditProblemBytes {
		r.body.Write(b[:min(len(b), maxAuditProblemBytes-r.body.Len())])
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, write deadlines).
func (r *auditRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush implements http.Flusher for the streams.
func (r *auditRecorder) Flush() {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// AuditPage is a page of the audit log.
type AuditPage struct {
	Entries []store.AuditEntry `json:"entries" doc:"The entries, oldest (lowest id) first." nullable:"false"`
	// Next is the cursor of the next page, absent on the last.
	Next int64 `json:"next,omitempty" doc:"Pass as after to read the next page; absent when this page is the last."`
}

type auditInput struct {
	From     time.Time `query:"from" doc:"Only entries at or after this time (RFC 3339)."`
	To       time.Time `query:"to" doc:"Only entries before this time (RFC 3339)."`
	Identity string    `query:"identity" maxLength:"256" doc:"Only entries of this identity: its subject or its name."`
	Action   string    `query:"action" maxLength:"64" doc:"Only entries of this action (scenario.create, scenario.save, scenario.import, scenario.archive, scenario.unarchive, deploy, deploy.request, deploy.approve, deploy.reject, tests.save, tests.delete, tests.override, cancel, results.read, results.stream, audit.read, token.create, token.revoke, session.start, session.end, sessions.end)."`
	Scenario string    `query:"scenario" maxLength:"256" doc:"Only entries about this scenario."`
	Outcome  string    `query:"outcome" maxLength:"64" doc:"Only entries with this outcome: ok, or a problem code."`
	After    int64     `query:"after" minimum:"0" doc:"Paging cursor: only entries with a greater id (the previous page's next)."`
	Limit    int       `query:"limit" minimum:"1" maximum:"500" default:"100" doc:"Most entries in the page."`
}

type auditOutput struct {
	Body AuditPage
}

func (h *handlers) registerAudit(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "list-audit",
		Method:      http.MethodGet,
		Path:        "/api/audit",
		Summary:     "Read the audit log",
		Description: "Who saved, imported, archived, deployed or canceled which scenario, who read results, " +
			"from which address and with which outcome, oldest first, with filters. Admin only.",
		Tags:   []string{tagAccess},
		Errors: []int{http.StatusUnprocessableEntity},
	}, h.listAudit)
}

func (h *handlers) listAudit(ctx context.Context, in *auditInput) (*auditOutput, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 100
	}
	list, err := h.store.ListAudit(ctx, store.AuditFilter{
		From: in.From, To: in.To, Identity: in.Identity, Action: in.Action,
		Scenario: in.Scenario, Outcome: in.Outcome, After: in.After, Limit: limit + 1,
	})
	if err != nil {
		return nil, storeError(ctx, err, "", 0)
	}
	out := &auditOutput{Body: AuditPage{Entries: list}}
	if len(list) > limit {
		out.Body.Entries = list[:limit]
		out.Body.Next = list[limit-1].ID
	}
	if out.Body.Entries == nil {
		out.Body.Entries = []store.AuditEntry{}
	}
	return out, nil
}

// escapeHidden is s with each control or invisible character (names.IsHidden) written as
// \uXXXX: the scenario of a refused request (a path or a body naming no valid scenario) is
// stored as the client sent it, and a newline, an escape sequence or a direction override
// (a name shown as "prod-fraud certified") would show as something else in the log and its
// views. Valid scenario names have none, and stay as they are.
func escapeHidden(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, names.IsHidden) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02X", s[i]) // not UTF-8 (PostgreSQL refused the entry)
		case names.IsHidden(r):
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
