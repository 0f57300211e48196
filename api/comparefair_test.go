package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
)

// filtersGraph is a scenario of a Source and 96 Filter nodes, each described by 9,800
// copies of mark: about 0.95 MB of JSON.
func filtersGraph(mark string) string {
	var b strings.Builder
	b.WriteString(`{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}}`)
	desc := strings.Repeat(mark, 9_800)
	for i := range 96 {
		fmt.Fprintf(&b, `, {"id": "f%03d", "type": "Filter", "additionalFields": {"description": %q}, "expression": {"language": "expr", "expression": "#input.x > %d"}}`, i, desc, i)
	}
	b.WriteString(`], "edges": [{"from": "in", "to": "f000"}]}`)
	return b.String()
}

// TestLargeSaveNotStarvedByComparisons (hostile report, cmpbig: 480 filters of 4.8 MB under
// GOMEMLIMIT=3GiB, whose default budget is 10,066,329 bytes; here all a fifth of that, so
// that it runs in seconds under the race detector): with API tokens and a request budget of
// 2,013,265 bytes (half 1,006,632, a quarter 503,316, three quarters 1,509,949), a viewer's
// six loops compare versions 1 and 2 (about 952,000 bytes each). A comparison loads the first
// whole and the second up to half the budget: the viewer holds half, one comparison at a time
// (another one of the viewer's passes its quarter and is refused at once). An editor's save of
// a graph as large (under half: not 413) fits only once the comparison in progress has given
// its bytes back: half + the body passes the three quarters a large request may take. Its
// first bytes fitted, and its later ones, refused past a quarter read, were refused at once
// (no wait): without the fix, 0 of 3 saves were answered 201 ("503 503 503"; the report saw
// 10 of 10 refused), while the viewer's comparisons went on. With the fix, a body's later
// bytes wait their turn, and every save is answered 201.
func TestLargeSaveNotStarvedByComparisons(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	const budget = (3 << 30) / 320 / 5
	c := newClient(t, st, withTokens(st), func(cfg *api.Config) {
		cfg.RateLimits = api.DefaultRateLimits()
		cfg.RateLimits.RequestBodyBytes = budget
	})
	editor := tokenFor(t, st, "ed", auth.Editor, time.Time{})
	viewer := tokenFor(t, st, "vi", auth.Viewer, time.Time{})
	v1, v2 := filtersGraph("a"), filtersGraph("b")
	ctx := context.Background()
	if _, err := st.CreateScenario(ctx, "cmpbig", store.Draft{Graph: []byte(v1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SaveVersion(ctx, "cmpbig", 1, store.Draft{Graph: []byte(v2)}); err != nil {
		t.Fatal(err)
	}
	if len(v1) >= budget/2 || len(v1)+budget/2 <= budget-budget/4 {
		t.Fatalf("a graph of %d bytes: want under half the budget, %d, and past three quarters, %d, with half held", len(v1), budget/2, budget-budget/4)
	}

	stop := make(chan struct{})
	var loops sync.WaitGroup
	var compared, refused atomic.Int64
	for range 6 {
		loops.Add(1)
		go func() {
			defer loops.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, c.base+"/api/scenarios/cmpbig/compare?from=1&to=2", nil)
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+viewer)
				resp, err := c.http.Do(req)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					compared.Add(1)
				case http.StatusServiceUnavailable:
					refused.Add(1)
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); loops.Wait() })
	waitFor(t, "the viewer's comparisons to be answered", func() bool { return compared.Load() >= 3 })

	const saves = 3
	var saved int
	var statuses []string
	for i := range saves {
		body, err := json.Marshal(map[string]any{"baseVersion": 2 + saved, "graph": json.RawMessage(filtersGraph(string(rune('c' + i))))})
		if err != nil {
			t.Fatal(err)
		}
		r := c.send(request{Method: http.MethodPost, Path: "/api/scenarios/cmpbig/versions", Body: body,
			Header: map[string]string{"Authorization": "Bearer " + editor}})
		statuses = append(statuses, fmt.Sprint(r.Status))
		if r.Status == http.StatusCreated {
			saved++
		}
	}
	t.Logf("saves: %s; viewer's comparisons: %d answered, %d refused", strings.Join(statuses, " "), compared.Load(), refused.Load())
	if saved != saves {
		t.Errorf("%d of %d saves answered 201 (%s); want all", saved, saves, strings.Join(statuses, " "))
	}
}
