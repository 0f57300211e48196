package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
