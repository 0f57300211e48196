package api_test

import (
	"net/http"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

// A body that is not JSON is answered 400 invalid-json with where, as line and column (of
// bytes) of the first character that cannot be there, by hand: the c at line 2, column 11 of
// {"name": "x",\n  "graph" c}. Before, the message said what but not where, in a body of
// megabytes maybe (new-user round 153).
func TestInvalidJSONSaysWhere(t *testing.T) {
	c := newClient(t, sqliteStore(t))
	p := c.post("/api/scenarios", "{\"name\": \"x\",\n  \"graph\" c}").problem(t, http.StatusBadRequest, api.CodeInvalidJSON)
	if len(p.Errors) != 1 || p.Errors[0].Message != "invalid character 'c' after object key (line 2, column 11)" {
		t.Fatalf("errors %+v; want one, invalid character 'c' after object key (line 2, column 11)", p.Errors)
	}
}
