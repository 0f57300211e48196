package api_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

// Imports without a base version that race on one name all land, each on top of whatever is
// latest (hostile round: of 8 at once, 6 answered 409 version-conflict, and of imports
// creating the scenario some 409 scenario-exists): 8 at once create "race" and give versions
// 1 to 8; 8 more give versions 9 to 16.
func TestConcurrentImportsAllLand(t *testing.T) {
	c := newClient(t, sqliteStore(t))
	round := func() []int {
		var wg sync.WaitGroup
		answers := make([]*response, 8)
		for i := range answers {
			wg.Go(func() { answers[i] = c.post("/api/scenarios/race/import", tinyGraph) })
		}
		wg.Wait()
		var got []int
		for _, r := range answers {
			var imp api.ImportResult
			r.ok(t, http.StatusCreated, &imp)
			got = append(got, imp.Version.Version)
		}
		slices.Sort(got)
		return got
	}
	if got := round(); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("versions of the first 8 imports %v, want 1 to 8", got)
	}
	if got := round(); !slices.Equal(got, []int{9, 10, 11, 12, 13, 14, 15, 16}) {
		t.Errorf("versions of the next 8 imports %v, want 9 to 16", got)
	}
}
