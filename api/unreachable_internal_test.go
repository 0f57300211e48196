package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The store's database restarting is 503 not-ready, not a 500 (a hostile round: a pg_ctl
// restart under ingestion gave 6 to 194 answers 500 internal-error): PostgreSQL's answers
// while it shuts down and starts up (SQLSTATE class 08 and 57P, as pgx returns them) and a
// connection dropped mid-answer (unexpected EOF). Other database errors stay 500.
func TestStoreRestartingIsNotReady(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, http.StatusServiceUnavailable},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, http.StatusServiceUnavailable},
		{&pgconn.PgError{Code: "08006", Message: "connection failure"}, http.StatusServiceUnavailable},
		{fmt.Errorf("getting scenario %q: %w", "s", io.ErrUnexpectedEOF), http.StatusServiceUnavailable},
		{&pgconn.PgError{Code: "42P01", Message: "relation does not exist"}, http.StatusInternalServerError},
		{&pgconn.PgError{Code: "08P01", Message: "protocol violation"}, http.StatusInternalServerError},
		{&pgconn.PgError{Code: "57P04", Message: "database dropped"}, http.StatusInternalServerError},
		{errors.New("something else"), http.StatusInternalServerError},
	} {
		err := storeError(context.Background(), fmt.Errorf("appending: %w", tc.err), "s", 0)
		var se interface{ GetStatus() int }
		if !errors.As(err, &se) || se.GetStatus() != tc.want {
			t.Errorf("%v: answered %v, want status %d", tc.err, err, tc.want)
		}
	}
}
