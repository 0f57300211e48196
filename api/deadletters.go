package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/deploy"
)

// DeadLetterEntry is one failed event of a scenario's deployments.
type DeadLetterEntry struct {
	ID         int64             `json:"id" doc:"The cursor: increases with every result or dead letter of the scenario." example:"42"`
	DeadLetter deploy.DeadLetter `json:"deadLetter"`
	CreatedAt  time.Time         `json:"createdAt" doc:"When it was stored (at the checkpoint that covered its event)."`
}

// DeadLetterPage is a page of a scenario's dead letters.
type DeadLetterPage struct {
	Scenario    string            `json:"scenario"`
	DeadLetters []DeadLetterEntry `json:"deadLetters" doc:"In ID order; empty when there is nothing after the cursor yet."`
	Next        int64             `json:"next" doc:"The cursor for the next page: pass it as after."`
}

type deadLettersInput struct {
	Name  string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	After int64  `query:"after" minimum:"0" doc:"Return the dead letters with an id greater than this; 0 (the default) starts at the first."`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"At most this many dead letters."`
}

type deadLettersOutput struct {
	Body DeadLetterPage
}

func (h *handlers) registerDeadLetters(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "read-dead-letters",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/dead-letters",
		Summary:     "Read a scenario's dead letters",
		Description: "Pages through the events that failed in the scenario's deployments, oldest first, with a cursor (pass next as after). " +
			"An event that fails (a record that is not JSON, one that does not fit the schema its source enforces, a timestamp missing or refused, " +
			"an expression that fails or passes its budget, an aggregate input of the wrong type) goes no further and the deployment goes on; the event is kept here with its source, " +
			"position (HTTP log or Kafka offset), node, field and error, and its record (up to 64 KiB). Dead letters are stored at the " +
			"checkpoint that covers their event, exactly once across restarts, and kept as long as collected results (--result-retention).",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.deadLetters)
}

func (h *handlers) deadLetters(ctx context.Context, in *deadLettersInput) (*deadLettersOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	if _, err := h.store.GetScenario(ctx, in.Name); err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	page, err := h.store.ReadSinkResults(ctx, in.Name, deploy.DeadLetterSink, in.After, in.Limit)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	// A page (up to 4 MiB stored, about twice that decoded and encoded again) counts in the
	// request budget until it is answered, as a page of results does: 200 clients asking for
	// pages and reading nothing held 1.8 GB (found by a hostile client).
	n := 0
	for _, r := range page {
		n += 2 * len(r.Value)
	}
	if err := holdLoaded(ctx, n); err != nil {
		return nil, err
	}
	out := &deadLettersOutput{Body: DeadLetterPage{Scenario: in.Name, DeadLetters: make([]DeadLetterEntry, 0, len(page)), Next: in.After}}
	for _, r := range page {
		e := DeadLetterEntry{ID: r.ID, CreatedAt: r.CreatedAt}
		if err := json.Unmarshal(r.Value, &e.DeadLetter); err != nil {
			e.DeadLetter.Message = "unreadable dead letter: " + err.Error()
		}
		out.Body.DeadLetters = append(out.Body.DeadLetters, e)
		out.Body.Next = r.ID
	}
	return out, nil
}
