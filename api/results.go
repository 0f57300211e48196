package api

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// SinkResult is one result a collect sink stored.
type SinkResult struct {
	ID        int64           `json:"id" doc:"Increases by 1 per result of the scenario (all its sinks): the cursor." example:"42"`
	Sink      string          `json:"sink" doc:"The sink node's id."`
	Value     json.RawMessage `json:"value" doc:"The value the sink's expression gave."`
	CreatedAt time.Time       `json:"createdAt" doc:"When it was stored (at the checkpoint that covered it)."`
}

// SinkResultPage is a page of a collect sink's results.
type SinkResultPage struct {
	Scenario string       `json:"scenario"`
	Sink     string       `json:"sink"`
	Results  []SinkResult `json:"results" doc:"In ID order; at most limit results and 4 MiB of values, or one larger result. Empty when there is nothing after the cursor yet; a page shorter than limit does not mean there is nothing more."`
	Next     int64        `json:"next" doc:"The cursor for the next page: pass it as after. The last result's id, or the after given when the page is empty."`
}

type resultsInput struct {
	Name  string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Sink  string `path:"sinkId" doc:"The id of a collect sink node." example:"alerts"`
	After int64  `query:"after" minimum:"0" doc:"Return the results with an id greater than this; 0 (the default) starts at the first."`
	Limit int    `query:"limit" minimum:"1" maximum:"10000" default:"100" doc:"At most this many results. A page also stops before the result that would take its values past 4 MiB (it holds at least one result)."`
}

type resultsOutput struct {
	Body SinkResultPage
}

func (h *handlers) registerResults(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "read-sink-results",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/sinks/{sinkId}/results",
		Summary:     "Read a collect sink's results",
		Description: "Pages through the results a collect sink stored, oldest first, with a cursor: pass the answer's next as after, until a page comes back empty. " +
			"A page holds at most limit results and at most 4 MiB of values (store.MaxResultReadBytes), but always at least one result when there is one, " +
			"however large: a page may be shorter than limit while more results follow. " +
			"Results are stored at the deployment's checkpoints (every second by default), each exactly once, and kept across deployments " +
			"and restarts. 404 sink-not-found when no version of the scenario has a collect sink of that id.",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.results)
}

func (h *handlers) results(ctx context.Context, in *resultsInput) (*resultsOutput, error) {
	if err := h.checkSink(ctx, in.Name, in.Sink); err != nil {
		return nil, err
	}
	page, err := h.store.ReadSinkResults(ctx, in.Name, in.Sink, in.After, in.Limit)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	// A page's values (up to 4 MiB) count in the request budget until it is answered, as a
	// loaded version does: 150 clients that asked for pages and read nothing held 1 GB.
	n := 0
	for _, r := range page {
		n += len(r.Value)
	}
	if err := holdLoaded(ctx, n); err != nil {
		return nil, err
	}
	out := &resultsOutput{Body: SinkResultPage{Scenario: in.Name, Sink: in.Sink, Results: make([]SinkResult, len(page)), Next: in.After}}
	for i, r := range page {
		out.Body.Results[i] = sinkResultOut(r)
		out.Body.Next = r.ID
	}
	return out, nil
}

func sinkResultOut(r store.SinkResult) SinkResult {
	return SinkResult{ID: r.ID, Sink: r.Sink, Value: r.Value, CreatedAt: r.CreatedAt}
}

// checkSink answers scenario-not-found, or sink-not-found unless the scenario's latest version
// or its latest deployment's version has a collect sink of that id. The collect sinks of a
// version are decoded once and kept (collectSinks): a client looping on a results page of a
// scenario of 5 MB had each request decode it, holding up to the whole request budget, and
// kept other clients' requests out 78 % of the time (hostile round 131).
func (h *handlers) checkSink(ctx context.Context, name, sink string) error {
	if err := checkName(name); err != nil {
		return err
	}
	sc, err := h.store.GetScenario(ctx, name)
	if err != nil {
		return storeError(ctx, err, name, 0)
	}
	versions := []int{sc.LatestVersion}
	if list, err := h.store.ListDeployments(ctx, name, 0, 1); err == nil && len(list) > 0 && list[0].Version != sc.LatestVersion {
		versions = append(versions, list[0].Version)
	}
	known := true // every version's nodes are kept
	other := ""   // the kind of a node of that id that is not a collect sink
	for _, n := range versions {
		kind, found, kept := h.collectSinks.node(sc, n, sink)
		if !kept {
			known = false
			continue
		}
		if found && kind == "" {
			return nil
		}
		if found && other == "" {
			other = kind
		}
	}
	for _, n := range versions {
		if known {
			// Not decoded again only to say what the node of that id is: a client looping
			// on a missing sink of a large scenario decoded it each time (hostile round 134).
			break
		}
		v, err := h.store.GetVersion(ctx, name, n)
		if err != nil {
			return storeError(ctx, err, name, 0)
		}
		// Held while it is read only: a results stream goes on for hours. A version read
		// for the first time counts against the whole budget only (the designer opening a
		// deployed scenario opens a stream per collect sink at once).
		release, err := holdBriefly(ctx, len(v.Graph))
		if err != nil {
			return err
		}
		s, err := scenario.Decode(v.Graph)
		release()
		if err != nil {
			h.collectSinks.put(sc, n, nil) // none, and none to decode again
			continue
		}
		nodes := make([]sinkCheckNode, 0, len(s.Nodes))
		for _, node := range s.Nodes {
			kind := "" // a collect sink
			if node.Type != scenario.TypeSink || node.Subtype() != engine.SinkCollect {
				kind = string(node.Type)
				if node.Type == scenario.TypeSink {
					kind = node.Subtype() + " " + string(node.Type)
				}
			}
			nodes = append(nodes, sinkCheckNode{id: node.ID, kind: kind})
			if node.ID == sink && other == "" {
				other = kind
			}
		}
		h.collectSinks.put(sc, n, nodes)
		if slices.Contains(nodes, sinkCheckNode{id: sink}) {
			return nil
		}
	}
	if other != "" {
		return problemf(http.StatusNotFound, CodeSinkNotFound, "%q of scenario %q is a %s node: only a collect sink keeps results to read here", sink, name, other)
	}
	return problemf(http.StatusNotFound, CodeSinkNotFound, "scenario %q has no collect sink %q", name, sink)
}

// sinkCheckNode is a node of a version as checkSink sees it: its id and its kind ("" for a
// collect sink, else "Source", "stdout Sink", ...).
type sinkCheckNode struct{ id, kind string }

// collectSinkCache keeps, for the versions checkSink has decoded (a version never changes),
// a 64-bit hash of each node's id (maphash, seeded at random: ids an attacker picks cannot be
// made to collide) with its kind, at most collectSinkNodes nodes and collectSinkVersions
// versions; past either it starts over. Kinds are kept once each (at most
// collectSinkKinds; past that a node's kind is said as "other").
type collectSinkCache struct {
	mu       sync.Mutex
	seed     maphash.Seed
	versions map[collectSinkKey][]cachedNode
	nodes    int               // in versions
	kinds    map[string]string // each kind kept once
}

type cachedNode struct {
	hash uint64
	kind string
}

// collectSinkKey is a version: its scenario's name and creation (a store restored from a
// backup may hold another scenario of the name) and its number.
type collectSinkKey struct {
	name    string
	created int64
	number  int
}

// The cache's bounds: 2^19 nodes (12 MiB), 16,384 versions (their keys: the scenario's name,
// of at most 128 characters, and 16 bytes), 256 kinds.
const (
	collectSinkNodes    = 1 << 19
	collectSinkVersions = 16 << 10
	collectSinkKinds    = 256
)

// node returns the kind of the version's node id ("" for a collect sink), whether it has
// one, and whether the version is kept.
func (c *collectSinkCache) node(sc store.Scenario, number int, id string) (kind string, found, kept bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nodes, ok := c.versions[collectSinkKey{sc.Name, sc.CreatedAt.UnixNano(), number}]
	if !ok {
		return "", false, false
	}
	h := maphash.String(c.seed, id)
	for _, n := range nodes {
		if n.hash == h {
			return n.kind, true, true
		}
	}
	return "", false, true
}

// put keeps the version's nodes.
func (c *collectSinkCache) put(sc store.Scenario, number int, nodes []sinkCheckNode) {
	if len(nodes)+1 > collectSinkNodes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.versions == nil || c.nodes+len(nodes)+1 > collectSinkNodes || len(c.versions) >= collectSinkVersions {
		c.versions, c.nodes, c.seed, c.kinds = map[collectSinkKey][]cachedNode{}, 0, maphash.MakeSeed(), map[string]string{}
	}
	kept := make([]cachedNode, len(nodes))
	for i, n := range nodes {
		kind, ok := c.kinds[n.kind]
		if !ok && n.kind != "" {
			kind = "other"
			if len(c.kinds) < collectSinkKinds {
				kind = strings.Clone(n.kind)
				c.kinds[kind] = kind
			}
		}
		kept[i] = cachedNode{hash: maphash.String(c.seed, n.id), kind: kind}
	}
	key := collectSinkKey{sc.Name, sc.CreatedAt.UnixNano(), number}
	if old, ok := c.versions[key]; ok {
		c.nodes -= len(old) + 1 // kept again by a check that missed it at the same time
	}
	c.versions[key] = kept
	c.nodes += len(nodes) + 1
}
