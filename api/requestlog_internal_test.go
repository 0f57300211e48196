package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/auth"
)

// A request's log line names the authenticated identity's subject (who sent the events of an
// ingestion is in no audit entry: the line is its trace), and none without one.
func TestRequestLogNamesTheSubject(t *testing.T) {
	m, err := newHTTPMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	for _, tc := range []struct {
		name    string
		handler http.Handler
		want    any
	}{
		{"authenticated", requestLog(log, m)(authenticate(nil)(ok)), "local"},
		{"no identity", requestLog(log, m)(ok), nil},
	} {
		buf.Reset()
		tc.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/scenarios/s/sources/in/events", nil))
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v in %q", tc.name, err, buf.String())
		}
		if line["msg"] != "request" || line["status"] != float64(http.StatusAccepted) || line["subject"] != tc.want {
			t.Errorf("%s: line %v; want subject %v", tc.name, line, tc.want)
		}
	}
}

// A client gone while its credentials are looked up (its request's context ended) gets no
// answer written and no ERROR line: it wrote 503 and "authenticating a request" at ERROR for
// every such client, unsampled.
func TestAuthenticateClientGone(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	h := authenticate(&auth.Authenticator{Tokens: sqliteStoreOf(t)})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot) // reached only with an identity or none
	}))
	ctx, cancel := context.WithCancel(withLogger(context.Background(), log))
	cancel()
	r := httptest.NewRequest("GET", "/api/scenarios", nil).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer "+auth.TokenPrefix+"abc")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code == http.StatusServiceUnavailable || w.Code == http.StatusTeapot || strings.Contains(buf.String(), "authenticating a request") {
		t.Errorf("answered %d, logged %q; want nothing", w.Code, buf.String())
	}
}
