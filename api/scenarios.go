package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/store"
)

// Scenario is a stored scenario without its graph.
type Scenario struct {
	Name          string    `json:"name" doc:"The scenario's name: 1 to 100 ASCII letters, digits, spaces, '-', '_' or '.', not starting or ending with a space." example:"large payments"`
	Archived      bool      `json:"archived" doc:"Archived scenarios are hidden from the default list and cannot change."`
	LatestVersion int       `json:"latestVersion" doc:"The number of the latest version (1, 2, ...)." example:"3"`
	CreatedAt     time.Time `json:"createdAt" doc:"When version 1 was saved (UTC)."`
	CreatedBy     string    `json:"createdBy" doc:"Who saved version 1."`
	ModifiedAt    time.Time `json:"modifiedAt" doc:"When the latest version was saved (UTC)."`
	ModifiedBy    string    `json:"modifiedBy" doc:"Who saved the latest version."`
}

func scenarioOut(s store.Scenario) Scenario {
	return Scenario{
		Name: s.Name, Archived: s.Archived, LatestVersion: s.LatestVersion,
		CreatedAt: s.CreatedAt, CreatedBy: s.CreatedBy, ModifiedAt: s.ModifiedAt, ModifiedBy: s.ModifiedBy,
	}
}

// ScenarioWithVersion is a scenario with its latest version.
type ScenarioWithVersion struct {
	Scenario Scenario `json:"scenario"`
	Latest   Version  `json:"latest" doc:"The latest version, with its graph."`
}

type listScenariosInput struct {
	Search   string `query:"search" maxLength:"100" doc:"Keep the scenarios whose name contains this text, ignoring ASCII case."`
	Archived string `query:"archived" enum:"false,true,any" default:"false" doc:"Keep the scenarios that are not archived (false), only the archived ones (true), or both (any)."`
	After    string `query:"after" maxLength:"100" doc:"Paging cursor: only scenarios whose name comes after this one in byte order (the previous page's next); empty (the default) starts at the first." example:"large payments"`
	Limit    int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Most scenarios in the page."`
}

// ScenarioList is a page of the list of scenarios.
type ScenarioList struct {
	Scenarios []ScenarioListItem `json:"scenarios" doc:"Ordered by name (byte order)."`
	Next      string             `json:"next,omitempty" doc:"When more scenarios remain: the after of the next page (the last name in this one)." example:"large payments"`
}

// ScenarioListItem is a scenario in the list, with its deployment status.
type ScenarioListItem struct {
	Scenario
	DeploymentStatus ScenarioDeployment `json:"deploymentStatus" doc:"Its latest deployment, as GET /api/scenarios/{name}/deployment gives it."`
}

type listScenariosOutput struct {
	Body ScenarioList
}

// NewScenario is a scenario to create.
type NewScenario struct {
	Name    string `json:"name" doc:"The new scenario's name; see Scenario.name for the rules." example:"large payments"`
	Graph   Graph  `json:"graph"`
	Comment string `json:"comment,omitempty" maxLength:"10000" doc:"What this version is." example:"first draft"`
}

type createScenarioInput struct {
	Body NewScenario
}

type versionOutput struct {
	Location string `header:"Location" doc:"Where the version is."`
	Body     Version
}

type getScenarioInput struct {
	Name string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
}

type getScenarioOutput struct {
	Body ScenarioWithVersion
}

type scenarioOutput struct {
	Body Scenario
}

func (h *handlers) registerScenarios(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "list-scenarios",
		Method:      http.MethodGet,
		Path:        "/api/scenarios",
		Summary:     "List scenarios",
		Description: "Lists the scenarios, by name, without their graphs, with their deployment status: by default those not archived, a page at a time (limit, 100 by default; next gives the after of the next page).",
		Tags:        []string{tagScenarios},
	}, h.listScenarios)

	register(hapi, h, huma.Operation{
		OperationID:   "create-scenario",
		Method:        http.MethodPost,
		Path:          "/api/scenarios",
		Summary:       "Create a scenario",
		Description:   "Creates a scenario with the graph as its version 1. The graph must decode as a scenario (see Graph); it need not be valid yet, but a graph with errors of the limit class (too many nodes or edges, a node id not usable in a URL, a window of too many slices or windows, an expression too long or too deep) is refused with 422 scenario-exceeds-limits, its problems naming node and field.",
		Tags:          []string{tagScenarios},
		DefaultStatus: http.StatusCreated,
		Errors:        []int{http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity},
	}, h.createScenario)

	register(hapi, h, huma.Operation{
		OperationID: "get-scenario",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}",
		Summary:     "Get a scenario and its latest version",
		Tags:        []string{tagScenarios},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.getScenario)

	register(hapi, h, huma.Operation{
		OperationID: "archive-scenario",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/archive",
		Summary:     "Archive a scenario",
		Description: "Archives the scenario: it keeps its versions, but is hidden from the default list and cannot change until unarchived. Archiving an archived scenario is not an error. Scenarios are never deleted through the API.",
		Tags:        []string{tagScenarios},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict},
	}, func(ctx context.Context, in *getScenarioInput) (*scenarioOutput, error) {
		return h.setArchived(ctx, in.Name, true)
	})

	register(hapi, h, huma.Operation{
		OperationID: "unarchive-scenario",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/unarchive",
		Summary:     "Unarchive a scenario",
		Tags:        []string{tagScenarios},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, func(ctx context.Context, in *getScenarioInput) (*scenarioOutput, error) {
		return h.setArchived(ctx, in.Name, false)
	})
}

func (h *handlers) listScenarios(ctx context.Context, in *listScenariosInput) (*listScenariosOutput, error) {
	filter := store.ScenarioFilter{NameContains: in.Search}
	switch in.Archived {
	case "true":
		filter.Archived = store.OnlyArchived
	case "any":
		filter.Archived = store.AnyArchived
	}
	list, next, latest, err := h.scenarioPage(ctx, filter, in.After, in.Limit)
	if err != nil {
		return nil, err
	}
	out := &listScenariosOutput{}
	out.Body.Next = next
	out.Body.Scenarios = make([]ScenarioListItem, len(list))
	for i, s := range list {
		out.Body.Scenarios[i] = ScenarioListItem{Scenario: scenarioOut(s), DeploymentStatus: scenarioDeployment(s.Name, latest[s.Name])}
	}
	return out, nil
}

// ScenarioListsAtOnce is how many scenario lists (GET /api/scenarios, GET /api/deployments)
// the server reads from the store at once; others wait their turn. A list whose search
// matches little reads every scenario's name (30,000 in 23 ms on SQLite): 30 clients listing
// at once held the store's read connections, and a read of one scenario waited 1 s.
const ScenarioListsAtOnce = 2

// ScenarioListsPerClient is how many scenario lists one identity (or client address) may have
// being read or waiting their turn; more are answered 503 requests-busy. One client's 120
// connections listing made other clients' lists wait 3.25 s (hostile round 16).
const ScenarioListsPerClient = 2

// scenarioPage reads a page of the scenarios filter keeps, the after of the next page when
// more remain, and the latest deployment of each scenario in the page that has one; at most
// ScenarioListsAtOnce at once.
// (limit is at least 1 and at most store.MaxNamesAtOnce; out of that range, it is taken as
// the nearest.)
func (h *handlers) scenarioPage(ctx context.Context, filter store.ScenarioFilter, after string, limit int) ([]store.Scenario, string, map[string]*store.Deployment, error) {
	limit = min(max(limit, 1), store.MaxNamesAtOnce)
	// A client's lists beyond ScenarioListsPerClient (reading or waiting) are refused, so that
	// one client's many connections do not queue ahead of everyone else's lists.
	client := rateKeyOf(ctx)
	h.listsMu.Lock()
	if h.listsBy[client] >= ScenarioListsPerClient {
		h.listsMu.Unlock()
		return nil, "", nil, huma.ErrorWithHeaders(problemf(http.StatusServiceUnavailable, CodeRequestsBusy,
			"this client has %d scenario lists being read or waiting already; retry in a second", ScenarioListsPerClient), http.Header{"Retry-After": {"1"}})
	}
	h.listsBy[client]++
	h.listsMu.Unlock()
	defer func() {
		h.listsMu.Lock()
		if h.listsBy[client]--; h.listsBy[client] <= 0 {
			delete(h.listsBy, client)
		}
		h.listsMu.Unlock()
	}()
	h.listsWaiting.Add(1)
	err := h.lists.Acquire(ctx, 1)
	h.listsWaiting.Add(-1)
	if err != nil {
		return nil, "", nil, storeError(ctx, err, "", 0) // the client is gone: not an internal error
	}
	defer h.lists.Release(1)
	// One more than the page says whether more remain.
	filter.After, filter.Limit = after, limit+1
	list, err := h.store.ListScenarios(ctx, filter)
	if err != nil {
		return nil, "", nil, storeError(ctx, err, "", 0)
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		next = list[len(list)-1].Name
	}
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = s.Name
	}
	deployed, err := h.store.LatestDeploymentsOf(ctx, names)
	if err != nil {
		return nil, "", nil, storeError(ctx, err, "", 0)
	}
	latest := make(map[string]*store.Deployment, len(deployed))
	for i := range deployed {
		latest[deployed[i].Scenario] = &deployed[i]
	}
	// The page is cut at maxPageBytes of its text and counted in the request budget
	// (holdPage): each scenario's names, and its latest deployment's text, whose name and
	// reason an answer writes twice (the scenario's status and its deployment). A page of
	// 1,000 scenarios whose deployments had 40 KB comments and reasons was 120 MB, and 40
	// slow readers of it ended the server (found by a hostile re-test).
	keep, err := holdPage(ctx, len(list), func(i int) int {
		s := list[i]
		n := jsonTextBytes(s.Name, s.CreatedBy, s.ModifiedBy)
		if d := latest[s.Name]; d != nil {
			n += deploymentText(*d) + jsonTextBytes(d.Scenario, d.Reason)
		}
		return n
	})
	if err != nil {
		return nil, "", nil, err
	}
	if keep < len(list) {
		list = list[:keep]
		next = list[keep-1].Name
	}
	return list, next, latest, nil
}

func (h *handlers) createScenario(ctx context.Context, in *createScenarioInput) (*versionOutput, error) {
	noteAudit(ctx, in.Body.Name, 1)
	if err := checkName(in.Body.Name); err != nil {
		return nil, err
	}
	s, err := decodeGraph(in.Body.Graph)
	if err != nil {
		return nil, err
	}
	if err := h.checkStorable(ctx, s); err != nil {
		return nil, err
	}
	v, err := h.store.CreateScenario(ctx, in.Body.Name, store.Draft{
		Graph: []byte(in.Body.Graph), Comment: in.Body.Comment, Author: identityName(ctx),
	})
	if err != nil {
		return nil, storeError(ctx, err, in.Body.Name, 0)
	}
	return &versionOutput{Location: versionURL(v.Scenario, v.Number), Body: versionOut(v)}, nil
}

func (h *handlers) getScenario(ctx context.Context, in *getScenarioInput) (*getScenarioOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	s, err := h.store.GetScenario(ctx, in.Name)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	// The version the scenario names as its latest, rather than GetLatestVersion: a save in
	// between would make the two disagree.
	v, err := h.store.GetVersion(ctx, in.Name, s.LatestVersion)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	if err := holdLoaded(ctx, len(v.Graph)); err != nil {
		return nil, err
	}
	return &getScenarioOutput{Body: ScenarioWithVersion{Scenario: scenarioOut(s), Latest: versionOut(v)}}, nil
}

func (h *handlers) setArchived(ctx context.Context, name string, archived bool) (*scenarioOutput, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	setArchived := h.store.SetArchived
	if h.runtime != nil {
		setArchived = h.runtime.SetArchived // not between a deploy's stop and its record
	}
	s, err := setArchived(ctx, name, archived)
	if err != nil {
		return nil, storeError(ctx, err, name, 0)
	}
	return &scenarioOutput{Body: scenarioOut(s)}, nil
}

// versionURL is the path of a version of a scenario.
func versionURL(name string, number int) string {
	return fmt.Sprintf("/api/scenarios/%s/versions/%d", url.PathEscape(name), number)
}
