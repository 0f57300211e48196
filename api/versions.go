package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/store"
)

// Version is one saved version of a scenario.
type Version struct {
	Scenario  string    `json:"scenario" doc:"The scenario's name." example:"large payments"`
	Version   int       `json:"version" doc:"The version number: 1, 2, ... without gaps." example:"2"`
	Comment   string    `json:"comment" doc:"What changed." example:"raise the limit to 1000"`
	Author    string    `json:"author" doc:"Who saved it (the authenticated identity's name; local without authentication)." example:"anna"`
	CreatedAt time.Time `json:"createdAt,omitzero" doc:"When it was saved (UTC); absent for a version that was not saved."`
	Graph     Graph     `json:"graph,omitempty" doc:"The scenario graph as it was saved; absent in the version history."`
}

func versionOut(v store.Version) Version {
	return Version{
		Scenario: v.Scenario, Version: v.Number, Comment: v.Comment, Author: v.Author,
		CreatedAt: v.CreatedAt, Graph: Graph(v.Graph),
	}
}

// VersionList is a page of a scenario's version history.
type VersionList struct {
	Scenario string    `json:"scenario"`
	Versions []Version `json:"versions" doc:"Newest first, without graphs."`
	Next     int       `json:"next,omitempty" doc:"When older versions remain: the before of the next page (the oldest version of this one)." example:"101"`
}

type listVersionsInput struct {
	Name   string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Before int    `query:"before" minimum:"0" maximum:"2147483647" doc:"Paging cursor: only versions numbered below this (the previous page's next); 0 (the default) starts at the latest."`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Most versions in the page."`
}

// NewVersion is a version to save on top of BaseVersion.
type NewVersion struct {
	BaseVersion int    `json:"baseVersion" minimum:"1" doc:"The version the author started editing from. When it is no longer the latest the save is refused with 409 version-conflict." example:"2"`
	Graph       Graph  `json:"graph"`
	Comment     string `json:"comment,omitempty" maxLength:"10000" doc:"What changed." example:"raise the limit to 1000"`
}

// ImportResult is what an import stored, and how its graph validates.
type ImportResult struct {
	Created    bool             `json:"created" doc:"True when the import created the scenario (its version 1)."`
	Version    Version          `json:"version" doc:"The version the import saved, without its graph."`
	Validation ValidationResult `json:"validation" doc:"The imported graph's validation: imports are stored even when it has errors, as saves are (except errors of the limit class, which refuse the import)."`
}

type versionPath struct {
	Name    string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Version int    `path:"version" minimum:"1" doc:"The version number." example:"1"`
}

type listVersionsOutput struct {
	Body VersionList
}

type getVersionOutput struct {
	Body Version
}

type saveVersionInput struct {
	Name string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Body NewVersion
}

type exportInput struct {
	Name    string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Version int    `query:"version" minimum:"1" doc:"The version number; the latest when absent."`
}

type exportOutput struct {
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition" doc:"attachment; filename=\"NAME-vN.json\""`
	Body               []byte
}

type importInput struct {
	Name        string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	BaseVersion int    `query:"baseVersion" minimum:"1" doc:"The version the imported graph replaces; 409 version-conflict when it is no longer the latest. When absent, the import goes on top of the latest version, or creates the scenario when there is none."`
	Comment     string `query:"comment" maxLength:"10000" default:"imported" doc:"The new version's comment."`
	Body        Graph
}

type importOutput struct {
	Location string `header:"Location"`
	Body     ImportResult
}

func (h *handlers) registerVersions(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "list-versions",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/versions",
		Summary:     "Version history",
		Description: "Lists the scenario's versions, newest first, without their graphs, a page at a time (limit, 100 by default; next gives the before of the next page). Imports and saves add versions without end, so the history is read in pages.",
		Tags:        []string{tagVersions},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.listVersions)

	register(hapi, h, huma.Operation{
		OperationID:   "save-version",
		Method:        http.MethodPost,
		Path:          "/api/scenarios/{name}/versions",
		Summary:       "Save a new version",
		Description:   "Saves the graph as the next version, on top of baseVersion (optimistic concurrency): when another save got there first, the answer is 409 version-conflict with both versions. The graph must decode as a scenario; it need not be valid yet, but a graph with errors of the limit class is refused with 422 scenario-exceeds-limits (see create-scenario).",
		Tags:          []string{tagVersions},
		DefaultStatus: http.StatusCreated,
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge,
			http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity},
	}, h.saveVersion)

	register(hapi, h, huma.Operation{
		OperationID: "get-version",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/versions/{version}",
		Summary:     "Get a version",
		Description: "Returns one version of the scenario, with its graph.",
		Tags:        []string{tagVersions},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.getVersion)

	exportOp := huma.Operation{
		OperationID: "export-scenario",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/export",
		Summary:     "Export a version as JSON",
		Description: "Returns the graph of a version (the latest by default) exactly as it was saved, as a file to download. POST it to the import operation to bring it back.",
		Tags:        []string{tagVersions},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
		Responses: map[string]*huma.Response{"200": {
			Description: "The scenario graph.",
			Content:     map[string]*huma.MediaType{"application/json": {Schema: Graph{}.Schema(hapi.OpenAPI().Components.Schemas)}},
		}},
	}
	register(hapi, h, exportOp, h.export)

	register(hapi, h, huma.Operation{
		OperationID:   "import-scenario",
		Method:        http.MethodPost,
		Path:          "/api/scenarios/{name}/import",
		Summary:       "Import a scenario JSON",
		Description:   "Saves a scenario graph (as the export operation returns it) as a new version of the scenario, creating the scenario when it does not exist. The graph must decode as a scenario and have no errors of the limit class (422 scenario-exceeds-limits, see create-scenario); the answer carries its validation.",
		Tags:          []string{tagVersions},
		DefaultStatus: http.StatusCreated,
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge,
			http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity},
	}, h.importScenario)
}

func (h *handlers) listVersions(ctx context.Context, in *listVersionsInput) (*listVersionsOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	// One more than the page says whether older versions remain.
	list, err := h.store.ListVersions(ctx, in.Name, in.Before, in.Limit+1)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	out := &listVersionsOutput{Body: VersionList{Scenario: in.Name}}
	if len(list) > in.Limit {
		list = list[:in.Limit]
		out.Body.Next = list[len(list)-1].Number
	}
	keep, err := holdPage(ctx, len(list), func(i int) int { return jsonTextBytes(list[i].Comment, list[i].Author) })
	if err != nil {
		return nil, err
	}
	if keep < len(list) {
		list = list[:keep]
		out.Body.Next = list[keep-1].Number
	}
	out.Body.Versions = make([]Version, len(list))
	for i, v := range list {
		out.Body.Versions[i] = versionOut(v)
	}
	return out, nil
}

func (h *handlers) saveVersion(ctx context.Context, in *saveVersionInput) (*versionOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	s, err := decodeGraph(in.Body.Graph)
	if err != nil {
		return nil, err
	}
	if err := h.checkStorable(ctx, s); err != nil {
		return nil, err
	}
	v, err := h.store.SaveVersion(ctx, in.Name, in.Body.BaseVersion, store.Draft{
		Graph: []byte(in.Body.Graph), Comment: in.Body.Comment, Author: identityName(ctx),
	})
	if err != nil {
		return nil, h.versionError(ctx, err, in.Name, in.Body.BaseVersion)
	}
	noteAudit(ctx, "", v.Number)
	return &versionOutput{Location: versionURL(v.Scenario, v.Number), Body: versionOut(v)}, nil
}

// versionError tells a missing scenario from a missing version, which the store both
// reports as store.ErrNotFound.
func (h *handlers) versionError(ctx context.Context, err error, name string, base int) error {
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := h.store.GetScenario(ctx, name); gerr == nil {
			return storeError(ctx, err, name, base)
		}
		return storeError(ctx, err, name, 0)
	}
	return storeError(ctx, err, name, base)
}

func (h *handlers) getVersion(ctx context.Context, in *versionPath) (*getVersionOutput, error) {
	v, err := h.loadVersion(ctx, in.Name, in.Version)
	if err != nil {
		return nil, err
	}
	return &getVersionOutput{Body: versionOut(v)}, nil
}

// loadVersion returns version number of the scenario name, or its latest version when number
// is 0, with its graph, counted against the request's budget (holdLoaded: 503 requests-busy
// past it).
func (h *handlers) loadVersion(ctx context.Context, name string, number int) (store.Version, error) {
	if err := checkName(name); err != nil {
		return store.Version{}, err
	}
	if number == 0 {
		v, err := h.store.GetLatestVersion(ctx, name)
		if err != nil {
			return store.Version{}, storeError(ctx, err, name, 0)
		}
		return v, holdLoaded(ctx, len(v.Graph))
	}
	v, err := h.store.GetVersion(ctx, name, number)
	if err != nil {
		return store.Version{}, h.versionError(ctx, err, name, number)
	}
	return v, holdLoaded(ctx, len(v.Graph))
}

func (h *handlers) export(ctx context.Context, in *exportInput) (*exportOutput, error) {
	v, err := h.loadVersion(ctx, in.Name, in.Version)
	if err != nil {
		return nil, err
	}
	return &exportOutput{
		ContentType:        "application/json",
		ContentDisposition: fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("%s-v%d.json", v.Scenario, v.Number)),
		Body:               v.Graph,
	}, nil
}

// importRetries is how many times an import without a base version looks again at the
// scenario after another save or import came between its look and its write.
const importRetries = 32

// importDraft saves draft as scenario name's next version: on top of version base, or
// without a base (0) on top of the latest, creating the scenario when there is none. Without
// a base, another save or import between its look and its write (409 scenario-exists or
// version-conflict, hostile round: 6 of 8 concurrent imports) makes it look again, up to
// importRetries times: such an import means "on top of whatever is latest".
func (h *handlers) importDraft(ctx context.Context, name string, base int, draft store.Draft) (store.Version, bool, error) {
	for attempt := 0; ; attempt++ {
		b, created := base, false
		if b == 0 {
			sc, err := h.store.GetScenario(ctx, name)
			switch {
			case errors.Is(err, store.ErrNotFound):
				created = true
			case err != nil:
				return store.Version{}, false, storeError(ctx, err, name, 0)
			default:
				b = sc.LatestVersion
			}
		}
		var v store.Version
		var err error
		if created {
			v, err = h.store.CreateScenario(ctx, name, draft)
		} else {
			v, err = h.store.SaveVersion(ctx, name, b, draft)
		}
		var conflict *store.ConflictError
		raced := errors.Is(err, store.ErrAlreadyExists) || errors.As(err, &conflict)
		if base == 0 && raced && attempt < importRetries {
			continue
		}
		switch {
		case err == nil:
			return v, created, nil
		case created:
			return store.Version{}, false, storeError(ctx, err, name, 0)
		default:
			return store.Version{}, false, h.versionError(ctx, err, name, b)
		}
	}
}

func (h *handlers) importScenario(ctx context.Context, in *importInput) (*importOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	s, err := decodeGraph(in.Body)
	if err != nil {
		return nil, err
	}
	validation, err := h.validateScenario(ctx, s)
	if err != nil {
		return nil, err
	}
	if limits := validation.LimitErrors(); len(limits) > 0 {
		return nil, exceedsLimits(limits)
	}
	draft := store.Draft{Graph: []byte(in.Body), Comment: in.Comment, Author: identityName(ctx)}
	v, created, err := h.importDraft(ctx, in.Name, in.BaseVersion, draft)
	if err != nil {
		return nil, err
	}
	v.Graph = nil
	noteAudit(ctx, "", v.Number)
	return &importOutput{
		Location: versionURL(v.Scenario, v.Number),
		Body: ImportResult{
			Created:    created,
			Version:    versionOut(v),
			Validation: validationOut(validation),
		},
	}, nil
}
