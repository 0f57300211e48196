package api

import (
	"context"
	"testing"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// sqliteStoreOf is a SQLite store in a temporary directory of t, closed with it.
func sqliteStoreOf(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// as is a context of the identity subject (a token's), named as it.
func as(subject string) context.Context {
	return auth.WithIdentity(context.Background(), auth.Identity{Method: auth.MethodToken, Subject: subject, Name: subject})
}
