package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/deploy"
)

// A batch refused for the bytes of the source's backlog (--max-backlog-bytes) is answered 429
// backlog-full naming bytes, not events (a hostile round read "has 76050 events waiting ...
// (limit 100000)", all three bytes).
func TestBacklogFullInBytes(t *testing.T) {
	for _, tc := range []struct {
		err  *deploy.BackpressureError
		want string
	}{
		{&deploy.BackpressureError{Source: "in", Backlog: 1200, Batch: 100, Limit: 1000, Bytes: true, RetryAfter: time.Second},
			`source "in" of "s" has 1200 bytes of events waiting to be processed and the batch has 100 (limit 1000 bytes); send again later`},
		{&deploy.BackpressureError{Source: "in", Backlog: 200, Batch: 100, Limit: 250, RetryAfter: time.Second},
			`source "in" of "s" has 200 events waiting to be processed and the batch has 100 (limit 250); send again later`},
	} {
		err := runtimeError(context.Background(), tc.err, "s", 0)
		var hh huma.HeadersError
		var p *ProblemDetails
		if !errors.As(err, &hh) || hh.GetHeaders().Get("Retry-After") != "1" || !errors.As(err, &p) || p.Status != http.StatusTooManyRequests || p.Code != CodeBacklogFull || p.Detail != tc.want {
			t.Errorf("%+v: %v (%+v); want 429 %s %q", tc.err, err, p, CodeBacklogFull, tc.want)
		}
	}
}
