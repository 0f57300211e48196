package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// A checkpoint whose state lost a bit, or whose positions are not positions, is refused with
// ErrCorrupt, never restored.
func TestDamagedCheckpoint(t *testing.T) {
	_, schemaURL := pgtest.Schema(t)
	s := open(t, schemaURL)
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "damaged", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "damaged", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	state := []byte("window state: 3 sessions open")
	if _, err := s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: state}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	flipped := append([]byte(nil), state...)
	flipped[10] ^= 0x01
	if _, err := conn.Exec(ctx, `UPDATE checkpoints SET state = $1 WHERE deployment_id = $2`, flipped, d.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetLatestCheckpoint(ctx, d.ID)
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "CRC-32C") {
		t.Fatalf("a flipped bit: %v, want ErrCorrupt naming the CRC-32C", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE checkpoints SET state = $1, positions = '[{"source":"in","partition":0,"offset":-1}]' WHERE deployment_id = $2`, state, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLatestCheckpoint(ctx, d.ID); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("a negative offset: %v, want ErrCorrupt", err)
	}
}

// PostgreSQL's disk_full (53100) is ErrStoreFull for the callers.
func TestDiskFullIsStoreFull(t *testing.T) {
	_, schemaURL := pgtest.Schema(t)
	s := open(t, schemaURL)
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "full", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// A trigger raises disk_full, as the server does when a write finds no room.
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$`,
		`CREATE TRIGGER disk_full BEFORE INSERT ON event_chunks FOR EACH ROW EXECUTE FUNCTION disk_full()`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.AppendEvents(ctx, store.EventLog{Scenario: "full", Source: "in"}, [][]byte{[]byte(`{}`)})
	var pgErr *pgconn.PgError
	if !errors.Is(err, store.ErrStoreFull) || !errors.As(err, &pgErr) || pgErr.Code != "53100" {
		t.Fatalf("append on a full disk: %v, want ErrStoreFull wrapping 53100", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrStoreFull) {
		t.Errorf("Ping after a failed write: %v, want ErrStoreFull", err)
	}
	if _, err := conn.Exec(ctx, `DROP TRIGGER disk_full ON event_chunks`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, store.EventLog{Scenario: "full", Source: "in"}, [][]byte{[]byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping once writes succeed again: %v", err)
	}
}
