package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/store"
)

// ndjson is the media type of newline-delimited JSON: one event per line.
const ndjson = "application/x-ndjson"

// IngestResult says which offsets of the source's event log a batch of events got.
type IngestResult struct {
	Scenario    string    `json:"scenario"`
	Source      string    `json:"source"`
	FirstOffset int64     `json:"firstOffset" doc:"The log offset of the batch's first event; its events have consecutive offsets."`
	Count       int       `json:"count" doc:"Events in the batch."`
	Duplicate   bool      `json:"duplicate" doc:"True when a batch with the same Idempotency-Key was accepted before: nothing was stored again, and the offsets are the first batch's."`
	AcceptedAt  time.Time `json:"acceptedAt" doc:"When the batch was stored; the events' time when the source has no timestamp expression."`
}

type ingestInput struct {
	Name           string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Source         string `path:"sourceId" doc:"The id of an HTTP source node of the running version." example:"payments"`
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" pattern:"^[ -~]*$" doc:"Optional key naming this batch, of printable ASCII (as the IETF draft's Idempotency-Key, a structured-field string; a UUID is typical): a batch re-sent with the same key and the same events (after a timeout, a lost answer or a server restart) is stored once and answered with the first batch's offsets. The same key with other events (compared by a SHA-256 of the events) is refused with 422 idempotency-key-reused, nothing stored. Keys are the caller's own: with sign-in on, another identity (another token, another user) using the same key sends another batch. Use a new key for each batch."`
	ContentType    string `header:"Content-Type" doc:"application/json (one object, or an array of objects) or application/x-ndjson (one object a line)."`
	// ContentEncoding: the server does not decompress bodies (checkBody refuses them, for every
	// route); declared here for the API's description.
	ContentEncoding string `header:"Content-Encoding" doc:"identity or absent: compressed bodies are refused (415 unsupported-media-type)."`
	RawBody         []byte `contentType:"application/x-ndjson"`
}

type ingestOutput struct {
	Body IngestResult
}

func (h *handlers) registerEvents(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "ingest-events",
		// Not read by refuseNUL: huma reads it, within bodyReadTimeout.
		BodyReadTimeout: bodyReadTimeout,
		Method:          http.MethodPost,
		Path:            "/api/scenarios/{name}/sources/{sourceId}/events",
		Summary:         "Send events to a running scenario",
		DefaultStatus:   http.StatusAccepted,
		Description: "Accepts a batch of events, each a JSON object, for an HTTP source of the scenario's running deployment: " +
			"one object or an array of objects as application/json, or one object a line as application/x-ndjson. " +
			"Any server sharing the store takes it: one that does not run the deployment puts the batch into the source's event log in the store, " +
			"which the server running it reads (within a second). " +
			"The answer 202 comes once the batch is durable in the source's event log: it survives a crash of the server, and the deployment " +
			"processes it exactly once into its window state and collect results. With an Idempotency-Key, a re-sent batch is stored once, " +
			"so a client that re-sends every batch it got no 202 for (at-least-once sending) gets each event processed once. " +
			"A batch is all or nothing: one record that is not a JSON object the engine can decode (invalid JSON, a number out of range, " +
			"nesting deeper than 1000) refuses it (400 invalid-event, naming the event). A body with a Content-Encoding other than identity is " +
			"refused (415). When the deployment has fallen behind (its backlog of accepted, unprocessed events plus the batch would exceed " +
			"the server's limit) the answer is 429 backlog-full with Retry-After; send the batch again then. A batch larger than the limit " +
			"is accepted only when the backlog is empty.",
		Tags: []string{tagDeployments},
		// The body is split and checked by the handler, whatever its media type.
		SkipValidateBody: true,
		RequestBody: &huma.RequestBody{
			Description: "The events: a JSON object, an array of them, or one a line (application/x-ndjson).",
			Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
				OneOf: []*huma.Schema{
					{Type: huma.TypeObject, Description: "One event."},
					{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeObject}, Description: "A batch of events, in order."},
				},
			}}},
		},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge,
			http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, h.ingest)
	// huma documents the raw body as a binary string, whose contentMediaType is not OpenAPI 3.0.
	if item := hapi.OpenAPI().Paths["/api/scenarios/{name}/sources/{sourceId}/events"]; item != nil && item.Post != nil {
		item.Post.RequestBody.Content[ndjson] = &huma.MediaType{Schema: &huma.Schema{
			Type: huma.TypeString, Description: "One JSON object a line; blank lines are skipped.",
		}}
	}
}

func (h *handlers) ingest(ctx context.Context, in *ingestInput) (*ingestOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	if err := h.needRuntime(); err != nil {
		return nil, err
	}
	records, err := splitRecords(in.ContentType, in.RawBody)
	if err != nil {
		return nil, err
	}
	a, err := h.runtime.Ingest(ctx, in.Name, in.Source, batchKey(ctx, in.IdempotencyKey), records)
	if err != nil {
		if err := h.checkScenario(ctx, in.Name); err != nil {
			return nil, err
		}
		if errors.Is(err, deploy.ErrNotDeployed) {
			if p := h.notRunningHereProblem(ctx, in.Name); p != nil {
				return nil, p
			}
		}
		return nil, runtimeError(ctx, err, in.Name, 0)
	}
	return &ingestOutput{Body: IngestResult{
		Scenario: in.Name, Source: in.Source, FirstOffset: a.FirstOffset, Count: a.Count,
		Duplicate: a.Duplicate, AcceptedAt: a.AcceptedAt,
	}}, nil
}

// batchKey is the key a batch is stored under for its Idempotency-Key: the key within the
// caller's identity (its subject, and a newline, which no key holds), as payment APIs scope
// theirs to the account, so that another client's key never names this one's batch (a
// hostile round: a second identity's batch under a predictable key was refused 422, or, with
// the same events, answered duplicate with the first's offsets and not stored). Without
// sign-in (a loopback server open to all) the key is as it is. A client retrying under a new
// token (another subject) is another identity: its batch is stored again.
func batchKey(ctx context.Context, key string) string {
	id, ok := auth.FromContext(ctx)
	if key == "" || !ok || id.Method == auth.MethodNone || id.Subject == "" {
		return key
	}
	return id.Subject + "\n" + key
}

// splitRecords splits a request body into its events, in order, by content type. It checks
// the framing only (the runtime checks that each event is a JSON object), and stops at more
// than deploy.MaxBatchEvents events, before it has framed them all: a 10 MiB body holds five
// million "{}" lines, and framing them (a slice header each, for a batch that is then refused)
// took a few hundred MB a request, so that a handful of such requests at once ended the
// process.
func splitRecords(contentType string, body []byte) ([][]byte, error) {
	const most = deploy.MaxBatchEvents
	tooMany := func() error {
		return problemf(http.StatusBadRequest, CodeInvalidEvent,
			"the batch has more than %d events; send at most %d at once", most, most)
	}
	// A UTF-8 byte order mark before the body (a file saved by a Windows tool), as `run` and
	// test runs skip it: it made the first event "not a JSON object" (a new user's round).
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == ndjson {
		records := make([][]byte, 0, min(bytes.Count(body, []byte{'\n'})+1, most+1))
		for len(body) > 0 {
			line := body
			if i := bytes.IndexByte(body, '\n'); i >= 0 {
				line, body = body[:i], body[i+1:]
			} else {
				body = nil
			}
			if line = bytes.TrimSpace(line); len(line) > 0 {
				if len(records) == most {
					return nil, tooMany()
				}
				records = append(records, line)
			}
		}
		if len(records) == 0 {
			return nil, newProblem(http.StatusBadRequest, CodeInvalidEvent, "the body has no events")
		}
		return records, nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, newProblem(http.StatusBadRequest, CodeInvalidEvent, "the body has no events")
	}
	if trimmed[0] != '[' {
		// A first line that ends an object and a next one that starts another: NDJSON sent
		// as application/json (no single JSON value reads so), the likeliest slip.
		if i := bytes.IndexByte(trimmed, '\n'); i > 0 && bytes.HasSuffix(bytes.TrimSpace(trimmed[:i]), []byte("}")) &&
			bytes.HasPrefix(bytes.TrimSpace(trimmed[i:]), []byte("{")) {
			return nil, newProblem(http.StatusBadRequest, CodeInvalidEvent,
				"the body holds one JSON object a line: send it with Content-Type: application/x-ndjson, or as a JSON array of objects")
		}
		return [][]byte{trimmed}, nil
	}
	// An array: its elements one at a time, as the decoder frames them.
	notArray := func(err error) error {
		return problemf(http.StatusBadRequest, CodeInvalidJSON, "the body is not a JSON array of events: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil { // [
		return nil, notArray(err)
	}
	var records [][]byte
	for dec.More() {
		if len(records) == most {
			return nil, tooMany()
		}
		var r json.RawMessage
		if err := dec.Decode(&r); err != nil {
			return nil, notArray(err)
		}
		records = append(records, r)
	}
	if _, err := dec.Token(); err != nil { // ]
		return nil, notArray(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the array")
		}
		return nil, notArray(err)
	}
	if len(records) == 0 {
		return nil, newProblem(http.StatusBadRequest, CodeInvalidEvent, "the body has no events")
	}
	return records, nil
}

// isEventsPath reports /api/scenarios/{name}/sources/{sourceId}/events, which also takes
// application/x-ndjson bodies.
func isEventsPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/scenarios/")
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, "/events")
	if !ok {
		return false
	}
	name, source, ok := strings.Cut(rest, "/sources/")
	return ok && name != "" && source != "" && !strings.Contains(source, "/")
}

// notRunningHereProblem is the not-deployed answer for a scenario whose latest deployment the
// store keeps as running but this server does not run: paused (safe mode, --no-resume), it
// says so and how to resume; run by another server on the same store (its lease held), it
// names that server, where "is not deployed: deploy it first" would mislead (a deploy here
// takes the deployment over). For one whose latest deployment FAILED it gives the reason.
// Nil otherwise.
func (h *handlers) notRunningHereProblem(ctx context.Context, name string) *ProblemDetails {
	list, err := h.store.ListDeployments(ctx, name, 0, 1)
	if err != nil || len(list) == 0 {
		return nil
	}
	d := list[0]
	if d.Status == store.StatusFailed {
		// A client retrying on 409 learns why (a crash loop, a checkpoint the store lost)
		// rather than to deploy a scenario someone deployed.
		return problemf(http.StatusConflict, CodeNotDeployed, "scenario %q is not running: its deployment %d (version %d) FAILED: %s; deploy it again once the cause is fixed",
			name, d.ID, d.Version, d.Reason)
	}
	if d.Status != store.StatusRunning && d.Status != store.StatusDeploying {
		return nil
	}
	if !isPaused(d) {
		l, err := h.store.GetLease(ctx, d.ID)
		if err != nil || l.Owner == "" || l.Owner == h.runtime.Owner() {
			return nil
		}
		if !time.Now().Before(l.ExpiresAt) {
			// Its server stopped or lost the store: nobody runs it until one starts again or
			// it is deployed (a new-user round: "is not deployed: deploy it first" while the
			// deployments said RUNNING).
			return problemf(http.StatusConflict, CodeNotDeployed, "scenario %q is not running: its deployment %d (version %d) is RUNNING in the store, but the server that ran it, %q, has not renewed its lease since %s (stopped, or cut off from the store): "+
				"it resumes when that server starts again, or deploy version %d here ({\"version\": %d}) to take it over from its last checkpoint",
				name, d.ID, d.Version, names.Cut(l.Owner, 200), l.ExpiresAt.UTC().Format(time.RFC3339), d.Version, d.Version)
		}
		return problemf(http.StatusConflict, CodeNotDeployed, "scenario %q runs on another server sharing this store, %q (deployment %d, version %d; "+
			"its lease renewed until %s): send its events to that server (deploying the scenario here would take the deployment over from it)",
			name, names.Cut(l.Owner, 200), d.ID, d.Version, l.ExpiresAt.UTC().Format(time.RFC3339))
	}
	// (The reason names the version to deploy since 2026-12-07; a stored one of before does not.)
	if strings.Contains(d.Reason, "{\"version\": ") {
		return problemf(http.StatusConflict, CodeNotDeployed, "scenario %q is paused, not running (deployment %d, version %d): %s (a deploy without a version takes the latest)",
			name, d.ID, d.Version, d.Reason)
	}
	return problemf(http.StatusConflict, CodeNotDeployed, "scenario %q is paused, not running (deployment %d, version %d): %s; to resume this version, deploy it with {\"version\": %d} (a deploy without a version takes the latest)",
		name, d.ID, d.Version, d.Reason, d.Version)
}
