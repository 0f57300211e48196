package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// The stable codes of ProblemDetails.Code. Programs branch on them; the detail text is for
// people and may change.
const (
	// CodeInvalidJSON (400): the request body is not JSON.
	CodeInvalidJSON = "invalid-json"
	// CodeBadRequest (400): the request is malformed in some other way.
	CodeBadRequest = "bad-request"
	// CodeInvalidName (400): a scenario name breaks the naming rules (store.ValidateName).
	CodeInvalidName = "invalid-name"
	// CodeValidationFailed (422): parameters or body do not fit the operation's schema;
	// Errors says where ("body.baseVersion", "path.version", "query.archived").
	CodeValidationFailed = "validation-failed"
	// CodeInvalidScenario (422): the graph is not a scenario in the scenario JSON form;
	// Problems lists why, with line and column in the graph's JSON text.
	CodeInvalidScenario = "invalid-scenario"
	// CodeScenarioExceedsLimits (422): saving or importing a graph with errors of the limit
	// class (too many nodes or edges, a node id its URLs cannot carry, a window of too many
	// slices or windows, an expression too long or too deep); Problems lists them with node
	// and field. Nothing was stored. Other validation errors do not stop a save.
	CodeScenarioExceedsLimits = "scenario-exceeds-limits"
	// CodeUnknownNode (422): the node named by nodeId is not in the graph.
	CodeUnknownNode = "unknown-node"
	// CodeScenarioHasErrors (422): the graph (or the node to test) has validation errors, so
	// it cannot run; Validation holds the whole validation, as /api/validation answers it.
	CodeScenarioHasErrors = "scenario-has-errors"
	// CodeTestTimeout (422): a test run took longer than the server's limit
	// (Config.TestTimeout) and was stopped; test fewer records or a lighter graph.
	CodeTestTimeout = "test-timeout"
	// CodeTestStateTooLarge (422): a test run's window state passed Config.TestMaxState and the run was
	// stopped; test fewer records or keys, or a window that keeps less.
	CodeTestStateTooLarge = "test-state-too-large"
	// CodeInvalidEvent (400): an event sent to an HTTP source is not a JSON object the engine
	// can decode (a number out of range, nesting deeper than 1000), or the body has none;
	// nothing of the batch was accepted.
	CodeInvalidEvent = "invalid-event"
	// CodeIdempotencyKeyReused (422): the Idempotency-Key names an accepted batch with other
	// events (another number of them, or other contents: the server keeps a SHA-256 of each
	// batch's events); nothing was accepted.
	CodeIdempotencyKeyReused = "idempotency-key-reused"
	// CodeSinkPathInUse (422): a file sink of the version writes to a file that a file sink
	// of another scenario's deployment owns: one running, or the latest, canceled or failed,
	// of a scenario that is not archived (deploying it again would cut the file back to its
	// checkpoint); the detail names it. Nothing was deployed.
	CodeSinkPathInUse = "sink-path-in-use"
	// CodeScenarioNotFound (404): no scenario has that name.
	CodeScenarioNotFound = "scenario-not-found"
	// CodeVersionNotFound (404): the scenario has no version of that number.
	CodeVersionNotFound = "version-not-found"
	// CodeSourceNotFound (404): the running version has no HTTP source of that id.
	CodeSourceNotFound = "source-not-found"
	// CodeSinkNotFound (404): the scenario has no collect sink of that id.
	CodeSinkNotFound = "sink-not-found"
	// CodeRouteNotFound (404): no operation has that path.
	CodeRouteNotFound = "route-not-found"
	// CodeMethodNotAllowed (405): the path exists, but not with that method.
	CodeMethodNotAllowed = "method-not-allowed"
	// CodeNotAcceptable (406): no response format matches the Accept header.
	CodeNotAcceptable = "not-acceptable"
	// CodeRequestTimeout (408): the request body did not arrive in time.
	CodeRequestTimeout = "request-timeout"
	// CodeScenarioExists (409): a scenario of that name exists already (maybe archived).
	CodeScenarioExists = "scenario-exists"
	// CodeVersionConflict (409): the save started from a version that is no longer the
	// latest; Conflict holds both versions.
	CodeVersionConflict = "version-conflict"
	// CodeScenarioArchived (409): archived scenarios cannot change; unarchive first.
	CodeScenarioArchived = "scenario-archived"
	// CodeDeploymentActive (409): the scenario has a deploying or running deployment.
	CodeDeploymentActive = "deployment-active"
	// CodeDeploymentChanged (409): the scenario's deployment changed while the request ran
	// (another request, or another server sharing the store, deployed or canceled it): its
	// status says what it is now.
	CodeDeploymentChanged = "deployment-changed"
	// CodeTooManyDeployments (409): the server runs its most scenarios (--max-deployments); a
	// deploy of one more waits for a cancel.
	CodeTooManyDeployments = "too-many-deployments"
	// CodeNotDeployed (409): the scenario has no running deployment (to cancel, or to send
	// events to).
	CodeNotDeployed = "not-deployed"
	// CodeBodyTooLarge (413): the request body is longer than the server's limit.
	CodeBodyTooLarge = "body-too-large"
	// CodeTooManyRecords (413): a test run was given more records than the server's limit
	// (Config.TestMaxRecords); nothing ran.
	CodeTooManyRecords = "too-many-records"
	// CodeUnsupportedMediaType (415): a request body that is not application/json.
	CodeUnsupportedMediaType = "unsupported-media-type"
	// CodeBacklogFull (429): the deployment has fallen behind: the source's accepted events
	// waiting to be processed reached the server's limit. Retry-After says when to send again.
	CodeBacklogFull = "backlog-full"
	// CodeNotReady (503): the store cannot be reached (readiness; a request whose store call
	// could not reach the database, with Retry-After).
	CodeNotReady = "not-ready"
	// CodeUnavailable (503): the request was cut short (server shutting down, timeout).
	CodeUnavailable = "unavailable"
	// CodeKafkaNotConfigured (503): the server has no Kafka brokers (--kafka-brokers).
	CodeKafkaNotConfigured = "kafka-not-configured"
	// CodeKafkaUnavailable (503): the Kafka brokers did not answer in time, or refused the
	// login; the detail says which.
	CodeKafkaUnavailable = "kafka-unavailable"
	// CodeStoreFull (503): the store could not write because its disk (or database) is
	// full, or (event batches) its disk has less free than the server keeps
	// (--min-free-disk); nothing was written. Retry-After says when to try again.
	CodeStoreFull = "store-full"
	// CodeInternal (500): a failure of the server or its database; the log has the cause.
	CodeInternal = "internal-error"
)

// Codes lists every code of ProblemDetails.Code.
var Codes = []string{
	CodeInvalidJSON, CodeBadRequest, CodeInvalidName, CodeValidationFailed, CodeInvalidScenario,
	CodeScenarioExceedsLimits, CodeUnknownNode, CodeScenarioHasErrors, CodeTestTimeout, CodeTestStateTooLarge, CodeInvalidEvent, CodeIdempotencyKeyReused,
	CodeSinkPathInUse, CodeNULCharacter, CodeTestsFailed, CodeTestCaseNotFound, CodeApprovalRequired, CodeRequestPending, CodeRequestDecided, CodeSelfApproval, CodeRequestNotFound,
	CodeUnauthenticated, CodeForbidden, CodeTokenNotFound, CodeSignInFailed, CodeSignInNotConfigured,
	CodeScenarioNotFound, CodeVersionNotFound, CodeSourceNotFound, CodeSinkNotFound, CodeRouteNotFound,
	CodeMethodNotAllowed, CodeNotAcceptable, CodeRequestTimeout, CodeScenarioExists,
	CodeVersionConflict, CodeScenarioArchived, CodeDeploymentActive, CodeDeploymentChanged, CodeTooManyDeployments, CodeNotDeployed, CodeBodyTooLarge,
	CodeTooManyRecords, CodeUnsupportedMediaType, CodeHostNotAllowed, CodeCrossOrigin, CodeRateLimited, CodeTestRunsBusy, CodeTooManyStreams, CodeStreamsBusy, CodeTooManyBodies, CodeIngestBusy, CodeRequestsBusy, CodeBacklogFull, CodeNotReady, CodeUnavailable, CodeKafkaNotConfigured, CodeKafkaUnavailable, CodeStoreFull, CodeInternal,
}

// ProblemDetails is every error answer: RFC 9457 problem details, sent as
// application/problem+json, with a stable Code and, for some codes, more data.
type ProblemDetails struct {
	Type     string `json:"type,omitempty" doc:"A URI reference for the problem type; absent means about:blank."`
	Title    string `json:"title" doc:"The HTTP status text." example:"Conflict"`
	Status   int    `json:"status" doc:"The HTTP status code." example:"409"`
	Code     string `json:"code" doc:"Stable, machine-readable error code." example:"version-conflict"`
	Detail   string `json:"detail,omitempty" doc:"What went wrong, for people." example:"version 2 is not the latest version of \"fraud\" (3 is)"`
	Instance string `json:"instance,omitempty" doc:"A URI reference for this occurrence."`

	Errors   []*huma.ErrorDetail `json:"errors,omitempty" doc:"For validation-failed and invalid-json: where the request is wrong."`
	Problems []scenario.Problem  `json:"problems,omitempty" doc:"For invalid-scenario: why the graph is not a scenario, with line and column in the graph's JSON text; for scenario-exceeds-limits: the limits passed, with node and field."`
	Conflict *VersionConflict    `json:"conflict,omitempty" doc:"For version-conflict: the version the save started from, the latest version and what was attempted."`

	Validation *ValidationResult `json:"validation,omitempty" doc:"For scenario-has-errors: the graph's validation, as POST /api/validation answers it."`

	Tests *TestCasesRun `json:"tests,omitempty" doc:"For tests-failed: how each saved test case ran on the version."`
}

// VersionConflict carries both sides of a version-conflict, so that the author can merge and
// save again on top of Latest.
type VersionConflict struct {
	BaseVersion int     `json:"baseVersion" doc:"The version the rejected save started from."`
	Latest      Version `json:"latest" doc:"The latest stored version, with its graph."`
	Attempted   Version `json:"attempted" doc:"What the save tried to store (not stored)."`
}

func (p *ProblemDetails) Error() string { return p.Code + ": " + p.Detail }

// GetStatus implements huma.StatusError.
func (p *ProblemDetails) GetStatus() int { return p.Status }

// ContentType makes huma send problems as application/problem+json.
func (p *ProblemDetails) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

func newProblem(status int, code, detail string) *ProblemDetails {
	return &ProblemDetails{Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

func problemf(status int, code, format string, args ...any) *ProblemDetails {
	return newProblem(status, code, fmt.Sprintf(format, args...))
}

// writeProblem writes p outside huma (router and middleware answers).
func writeProblem(w http.ResponseWriter, p *ProblemDetails) {
	body, err := json.Marshal(p)
	if err != nil {
		body = []byte(`{"title":"Internal Server Error","status":500,"code":"internal-error"}`)
		p.Status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	w.Write(append(body, '\n'))
}

// The answers huma gives itself (bad JSON, schema validation, body limits) go through
// huma.NewError; these make them ProblemDetails with a code. huma offers no per-API hook, so
// they are process-wide: this package is the only huma API of the server.
func init() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return humaProblem(nil, status, msg, errs)
	}
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		return humaProblem(ctx, status, msg, errs)
	}
}

// maxEchoedValue bounds, in bytes, the rejected value an error detail repeats: a 5 MB comment
// that is too long is not sent back whole.
const maxEchoedValue = 256

// echoedValue is v as an error detail repeats it: a string longer than maxEchoedValue bytes
// cut there (at a character boundary) with "…" after it; another value whose JSON is longer,
// left out (nil).
func echoedValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if len(x) <= maxEchoedValue {
			return x
		}
		cut := maxEchoedValue
		for cut > 0 && !utf8.RuneStart(x[cut]) {
			cut--
		}
		return x[:cut] + "…"
	default:
		if b, err := json.Marshal(x); err != nil || len(b) > maxEchoedValue {
			return nil
		}
		return v
	}
}

// bodyCutShort reports whether errs say that reading a request body failed because the
// client ended it early or reset its connection.
func bodyCutShort(errs []error) bool {
	for _, err := range errs {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
			return true
		}
	}
	return false
}

func humaProblem(ctx huma.Context, status int, msg string, errs []error) *ProblemDetails {
	var details []*huma.ErrorDetail
	for _, err := range errs {
		if err == nil {
			continue
		}
		var d huma.ErrorDetailer
		if errors.As(err, &d) {
			details = append(details, d.ErrorDetail())
		} else {
			details = append(details, &huma.ErrorDetail{Message: err.Error()})
		}
	}
	for _, d := range details {
		if d.Location == "body" {
			if body, ok := d.Value.(string); ok {
				d.Message += syntaxPosition(body, d.Message)
			}
			d.Value = nil // the whole body, maybe megabytes long
		}
		d.Value = echoedValue(d.Value)
	}
	if status == http.StatusInternalServerError && bodyCutShort(errs) {
		// The client's body ended before its Content-Length, or its connection was reset:
		// the client's doing, not the server's (round 16: a 500 and an ERROR line each).
		return newProblem(http.StatusBadRequest, CodeBadRequest, "the request body ended before its Content-Length, or the connection was reset while it was read")
	}
	p := newProblem(status, "", msg)
	for _, err := range errs {
		var tl *errTooLarge
		if errors.As(err, &tl) { // the body alone needs more than half its budget
			return tl.problem()
		}
		var cut *errHoldCut
		var pen *errPenalized
		if errors.As(err, &cut) || errors.As(err, &pen) { // cut for holding while others waited, or after
			code := CodeRequestsBusy
			if errors.Is(err, errIngestBusy) {
				code = CodeIngestBusy
			}
			return problemf(http.StatusServiceUnavailable, code, "%s", err.Error())
		}
		switch { // the body's read passed its budget (bodyBudget)
		case errors.Is(err, errIngestBusy):
			return problemf(http.StatusServiceUnavailable, CodeIngestBusy,
				"the server is reading and storing as many bytes of event batches as it takes at once; retry in a second")
		case errors.Is(err, errRequestsBusy):
			return problemf(http.StatusServiceUnavailable, CodeRequestsBusy,
				"the server is reading and handling as many bytes of request bodies as it takes at once; retry in a second")
		}
	}
	var malformed *malformedBody
	if status == http.StatusInternalServerError && len(errs) > 0 && errors.As(errors.Join(errs...), &malformed) {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the request body could not be read: %s", names.Cut(malformed.Error(), 200))
	}
	switch status {
	case http.StatusBadRequest:
		p.Code = CodeBadRequest
		for _, d := range details {
			if d.Location == "body" {
				p.Code, p.Detail = CodeInvalidJSON, "the request body is not valid JSON"
			}
		}
	case http.StatusNotAcceptable:
		p.Code = CodeNotAcceptable
	case http.StatusRequestTimeout:
		p.Code = CodeRequestTimeout
	case http.StatusRequestEntityTooLarge:
		p.Code = CodeBodyTooLarge
		if ctx != nil && ctx.Operation() != nil {
			p.Detail = fmt.Sprintf("the request body is larger than %d bytes", ctx.Operation().MaxBodyBytes-1)
		}
	case http.StatusUnsupportedMediaType:
		p.Code = CodeUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		p.Code = CodeValidationFailed
	case http.StatusInternalServerError:
		p.Code, p.Detail = CodeInternal, "internal error; the server log has the cause"
		if ctx != nil {
			loggerFrom(ctx.Context()).Error("internal error", "message", msg, "error", errors.Join(errs...))
		}
		details = nil // may show database errors
	default:
		p.Code = CodeBadRequest
		if status >= 500 {
			p.Code = CodeInternal
		}
	}
	p.Errors = details
	return p
}

// storeError turns an error of the store into the answer: the sentinels and typed errors of
// package store become 4xx problems, anything else a logged 500.
func storeError(ctx context.Context, err error, name string, version int) error {
	var conflict *store.ConflictError
	switch {
	case errors.As(err, &conflict):
		// The answer carries the latest version whole: counted as a loaded version.
		if err := holdLoaded(ctx, len(conflict.Latest.Graph)); err != nil {
			return err
		}
		p := problemf(http.StatusConflict, CodeVersionConflict,
			"version %d is not the latest version of %q (%d is, saved by %q); merge and save on top of version %d",
			conflict.Base, conflict.Latest.Scenario, conflict.Latest.Number, conflict.Latest.Author, conflict.Latest.Number)
		p.Conflict = &VersionConflict{
			BaseVersion: conflict.Base,
			Latest:      versionOut(conflict.Latest),
			Attempted:   versionOut(conflict.Attempted),
		}
		return p
	case errors.Is(err, store.ErrNotFound):
		if version > 0 {
			return problemf(http.StatusNotFound, CodeVersionNotFound, "scenario %q has no version %d", name, version)
		}
		return problemf(http.StatusNotFound, CodeScenarioNotFound, "no scenario is named %q (POST /api/scenarios creates one)", name)
	case errors.Is(err, store.ErrInvalidName):
		return newProblem(http.StatusBadRequest, CodeInvalidName, err.Error())
	case errors.Is(err, store.ErrInvalidJSON):
		return newProblem(http.StatusBadRequest, CodeInvalidJSON, err.Error())
	case errors.Is(err, store.ErrAlreadyExists):
		return problemf(http.StatusConflict, CodeScenarioExists, "a scenario named %q exists already (it may be archived)", name)
	case errors.Is(err, store.ErrArchived):
		return problemf(http.StatusConflict, CodeScenarioArchived, "scenario %q is archived; unarchive it first", name)
	case errors.Is(err, store.ErrDeploymentActive):
		return problemf(http.StatusConflict, CodeDeploymentActive, "scenario %q has an active deployment; cancel it first", name)
	case errors.Is(err, store.ErrInvalidTransition):
		// Two servers sharing the store deploying and canceling one scenario at once: the
		// other moved the deployment first (a hostile round: 500 internal-error, "cannot move
		// from CANCELED to CANCELED").
		return problemf(http.StatusConflict, CodeDeploymentChanged,
			"the deployment of %q changed while this request ran (another request, or another server sharing the store, deployed or canceled it): look at its status (GET /api/scenarios/%s/deployment), then try again if still needed",
			name, url.PathEscape(name))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the request was cut short")
	case errors.Is(err, store.ErrStoreFull):
		loggerFrom(ctx).Error("store full", "scenario", name, "error", err)
		return huma.ErrorWithHeaders(newProblem(http.StatusServiceUnavailable, CodeStoreFull,
			"the store's disk is full: nothing was written; retry once space is freed"), http.Header{"Retry-After": {storeFullRetryAfter}})
	}
	if unreachable(err) {
		loggerFrom(ctx).Error("store unreachable", "scenario", name, "error", err)
		return huma.ErrorWithHeaders(newProblem(http.StatusServiceUnavailable, CodeNotReady,
			"the store cannot be reached (its database is down or restarting); retry later"), http.Header{"Retry-After": {"5"}})
	}
	loggerFrom(ctx).Error("store failed", "scenario", name, "error", err)
	return newProblem(http.StatusInternalServerError, CodeInternal, "internal error; the server log has the cause")
}

// unreachable reports whether err is the store's database not answering on the network (a
// PostgreSQL server stopped or restarting: connection refused or reset), which a retry may
// get past: 503, not a 500 (hostile round: 357 ingestions answered 500 during a 20 s outage).
//
// A PostgreSQL server restarting also answers, while it shuts down and starts up, with the
// SQLSTATEs of connection exceptions (class 08) and of its shutdown and start (57P01
// admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), and a connection it drops mid-answer reads as an
// unexpected EOF: a pg_ctl restart under ingestion gave 6 to 194 answers 500 (a hostile round).
func unreachable(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var coded interface{ SQLState() string } // pgconn.PgError's, without the driver here
	if errors.As(err, &coded) {
		switch coded.SQLState() {
		case "08000", "08001", "08003", "08004", "08006", "57P01", "57P02", "57P03":
			// connection_exception, sqlclient_unable_to_establish_sqlconnection,
			// connection_does_not_exist, sqlserver_rejected_establishment_of_sqlconnection,
			// connection_failure, admin_shutdown, crash_shutdown, cannot_connect_now; not
			// 08P01 protocol_violation nor 57P04 database_dropped, which a retry does not mend
			return true
		}
	}
	return false
}

// storeFullRetryAfter is the Retry-After, in seconds, of a store-full answer.
const storeFullRetryAfter = "30"

// checkName answers invalid-name for a name store.ValidateName rejects.
func checkName(name string) error {
	if err := store.ValidateName(name); err != nil {
		return newProblem(http.StatusBadRequest, CodeInvalidName, err.Error())
	}
	return nil
}

// loggerKey is the context key of the request's logger.
type loggerKey struct{}

func withLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// loggerFrom returns the request's logger (with its request id), or slog.Default outside a
// request.
func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// syntaxPosition is " (line L, column C)" of the JSON syntax error msg in body, which huma
// gives without it ("invalid character 'c' after object key:value pair" in a body of
// megabytes: new-user round 153), and "" when body has no syntax error of that message.
// Columns count bytes.
func syntaxPosition(body, msg string) string {
	var se *json.SyntaxError
	if err := json.Unmarshal([]byte(body), new(json.RawMessage)); !errors.As(err, &se) || se.Error() != msg {
		return ""
	}
	before := body[:min(max(int(se.Offset)-1, 0), len(body))] // (Offset counts the character)
	line := strings.Count(before, "\n") + 1
	col := len(before) - strings.LastIndexByte(before, '\n')
	return fmt.Sprintf(" (line %d, column %d)", line, col)
}
