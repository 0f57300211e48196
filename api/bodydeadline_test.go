package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// TestNoReadDeadlineLeftBehind: an operation whose handler runs longer than huma's default
// body read timeout (5 s) after its body was read keeps its context, and the next request
// on the same keep-alive connection is answered. huma set that deadline on the connection
// and never cleared it: the server's background read then failed at 5 s and cancelled the
// request's context (a deploy running saved test cases answered 503 at 5.0 s), and the
// connection's, so later requests on it failed at once. The chain is the API's for a JSON
// body: checkBody and refuseNUL, then the operation declared through register.
func TestNoReadDeadlineLeftBehind(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	limitOf := func(string) int64 { return 1 << 20 }
	r.Use(checkBody(limitOf), refuseNUL(limitOf))
	hapi := humachi.New(r, huma.DefaultConfig("test", "0"))
	type in struct {
		Wait bool `query:"wait"`
		Body struct {
			Name string `json:"name"`
		}
	}
	type out struct {
		Body struct {
			Answer string `json:"answer"`
		}
	}
	h := &handlers{maxBody: 1 << 20}
	register(hapi, h, huma.Operation{OperationID: "slow", Method: http.MethodPost, Path: "/slow"},
		func(ctx context.Context, i *in) (*out, error) {
			var o out
			o.Body.Answer = "hello " + i.Body.Name
			if i.Wait {
				select {
				case <-ctx.Done():
					return nil, huma.Error503ServiceUnavailable("the request's context ended: " + context.Cause(ctx).Error())
				case <-time.After(5500 * time.Millisecond): // past huma's 5 s
				}
			}
			return &o, nil
		})
	srv := httptest.NewServer(r)
	defer srv.Close()
	client := srv.Client() // one keep-alive connection, used in turn
	post := func(query string) (int, string) {
		t.Helper()
		res, err := client.Post(srv.URL+"/slow"+query, "application/json", strings.NewReader(`{"name": "x"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := post("?wait=true"); code != http.StatusOK || !strings.Contains(body, `"hello x"`) {
		t.Fatalf("the slow request: %d %s", code, body)
	}
	for i := range 2 {
		if code, body := post(""); code != http.StatusOK || !strings.Contains(body, `"hello x"`) {
			t.Errorf("request %d after it on the connection: %d %s", i+1, code, body)
		}
	}
}
