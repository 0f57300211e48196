package api_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/scenario-server/scenario-server/api"
)

// The OpenAPI document, as served, passes kin-openapi's validation, in its 3.1 form and in
// huma's 3.0 downgrade, and documents every route the router serves (and nothing else).
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	h, err := api.New(api.Config{Store: sqliteStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL, http: srv.Client()}

	docs := map[string]*openapi3.T{}
	for path, version := range map[string]string{api.OpenAPIPath: "3.1.0", api.OpenAPI30Path: "3.0.3"} {
		r := c.get(path)
		r.ok(t, http.StatusOK, nil)
		doc, err := openapi3.NewLoader().LoadFromData(r.Body)
		if err != nil {
			t.Fatalf("loading %s: %v", path, err)
		}
		if doc.OpenAPI != version {
			t.Errorf("%s is OpenAPI %s, want %s", path, doc.OpenAPI, version)
		}
		if err := doc.Validate(t.Context()); err != nil {
			t.Errorf("validating %s: %v", path, err)
		}
		docs[path] = doc
	}
	doc := docs[api.OpenAPIPath]

	// What the router serves, walked with chi, against what the document says.
	served := map[string]bool{}
	err = chi.Walk(h.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Routes that are about the document, or pages for people, rather than API operations;
	// the sign-in is the browser's redirects and cookies (a token sign-in sets one).
	notOperations := []string{"GET " + api.OpenAPIPath, "GET " + api.OpenAPI30Path, "GET " + api.DocsPath, "GET /",
		"GET /auth/login", "GET /auth/callback", "POST /auth/logout", "POST /auth/token"}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			documented[method+" "+path] = true
			if op.OperationID == "" || op.Summary == "" || len(op.Tags) == 0 {
				t.Errorf("%s %s lacks an operation id, summary or tag", method, path)
			}
			checkErrorResponses(t, method+" "+path, op)
		}
	}
	for route := range served {
		if !documented[route] && !slices.Contains(notOperations, route) {
			t.Errorf("%s is served but not in the OpenAPI document", route)
		}
	}
	for route := range documented {
		if !served[route] {
			t.Errorf("%s is in the OpenAPI document but not served", route)
		}
	}
	for _, route := range notOperations {
		if !served[route] {
			t.Errorf("%s is not served", route)
		}
	}
	if len(documented) < 15 {
		t.Errorf("only %d operations documented: %v", len(documented), keys(documented))
	}

	// The problem schema lists every error code.
	problem := doc.Components.Schemas["ProblemDetails"]
	if problem == nil || problem.Value.Properties["code"] == nil {
		t.Fatal("no ProblemDetails schema with a code")
	}
	var codes []string
	for _, e := range problem.Value.Properties["code"].Value.Enum {
		codes = append(codes, e.(string))
	}
	if !slices.Equal(codes, api.Codes) {
		t.Errorf("code enum %q, want %q", codes, api.Codes)
	}
}

// checkErrorResponses: every documented 4xx and 5xx answer is problem+json.
func checkErrorResponses(t *testing.T, route string, op *openapi3.Operation) {
	t.Helper()
	for status, resp := range op.Responses.Map() {
		if !strings.HasPrefix(status, "4") && !strings.HasPrefix(status, "5") && status != "default" {
			continue
		}
		mt := resp.Value.Content.Get("application/problem+json")
		if mt == nil || mt.Schema == nil || !strings.HasSuffix(mt.Schema.Ref, "/ProblemDetails") {
			t.Errorf("%s: response %s is not documented as application/problem+json ProblemDetails", route, status)
		}
	}
	if op.Responses.Value("500") == nil {
		t.Errorf("%s: no 500 response documented", route)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
