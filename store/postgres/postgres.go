// Package postgres is the store.Store kept in PostgreSQL, through a pgxpool.Pool.
//
// The tables live in the connection's current schema (the first schema of search_path, which
// the URL may set: "?search_path=myschema"). Writes that check before they change (a save on a
// base version, a new deployment, archiving, a status change) lock the row they check with
// SELECT ... FOR NO KEY UPDATE, so concurrent callers, in this process or others, are
// serialized per scenario or deployment; appends lock their counter row (the scenario's
// last_sink_result_id, the event log's next_offset) by updating it, so IDs and offsets are
// handed out in commit order. Unique keys back this up: (scenario_id, number) for versions, at
// most one active deployment per scenario.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/scenario-server/scenario-server/migrations"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
	"github.com/scenario-server/scenario-server/store/internal/group"
)

// Store is the PostgreSQL store.Store. Create it with Open.
type Store struct {
	pool *pgxpool.Pool

	closeOnce sync.Once
	// full: the latest write transaction failed with disk_full (see classify).
	full atomic.Bool

	// appends commits concurrent event appends in one transaction (appendEvents).
	appends group.Committer[check.Append, store.EventBatch]
}

var _ store.Store = (*Store)(nil)

// defaultMaxConns is the pool's size when the URL does not give pool_max_conns: pgxpool's own
// default, max(4, CPUs), let 30 reads waiting on one locked table hold every connection and
// stop every deployment's ingestion and checkpoints for as long (hostile round: 55 s).
func defaultMaxConns() int32 {
	return int32(max(16, 4*runtime.NumCPU()))
}

// Open connects to the database at url, a PostgreSQL URL or keyword/value string as pgxpool
// accepts ("postgres://user:pass@host:5432/db?sslmode=disable&pool_max_conns=10"), and applies
// the pending migrations of migrations.Postgres() to the current schema. Concurrent Opens on
// the same schema (several servers starting) take turns through an advisory lock, waiting up
// to 5 minutes. The caller closes the store with Close.
// Errors: the URL does not parse, the database cannot be reached, or a migration fails (the
// failed migration is rolled back).
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors do not repeat the URL, which may hold a password.
		return nil, fmt.Errorf("parsing PostgreSQL URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	s := &Store{pool: pool}
	s.appends.Commit = s.commitAppends
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	var database, schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_database(), coalesce(current_schema(), '')`).
		Scan(&database, &schema); err != nil {
		return fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	if schema == "" {
		return errors.New("migrating PostgreSQL: no current schema (check search_path)")
	}
	// The lock covers one schema, so stores in other schemas of the same database (tests,
	// several installations) migrate without waiting for each other.
	h := fnv.New64a()
	fmt.Fprintf(h, "scenario-server migrations %s.%s", database, schema)
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64())), lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migrating PostgreSQL: %w", err)
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.Postgres(),
		goose.WithDisableGlobalRegistry(true), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrating PostgreSQL schema %q: %w", schema, err)
	}
	return nil
}

// Close closes the pool, waiting for connections in use to be released. Calls after the first
// return nil.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// inTx runs fn in a transaction and commits it when fn returns nil. A failure because the
// disk is full wraps store.ErrStoreFull.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, fn)
	if err == nil || isFull(err) {
		return s.classify(err)
	}
	return err
}

// querier is what *pgxpool.Pool and pgx.Tx share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// now is the time the store writes: UTC, microseconds (what timestamptz keeps).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// uniqueViolation is SQLSTATE unique_violation.
const uniqueViolation = "23505"

// isUnique reports whether err is a unique violation of the constraint or index named.
func isUnique(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == uniqueViolation && pgErr.ConstraintName == constraint
}

// scenarioRow is the part of a scenario row that writes check.
type scenarioRow struct {
	id            int64
	archived      bool
	latestVersion int
}

// lookupScenario reads the scenario name's row, with suffix appended to the query (such as
// " FOR NO KEY UPDATE"); it returns an error wrapping store.ErrNotFound when there is none.
func lookupScenario(ctx context.Context, q querier, name, suffix string) (scenarioRow, error) {
	var r scenarioRow
	err := q.QueryRow(ctx, `SELECT id, archived, latest_version FROM scenarios WHERE name = $1`+suffix, name).
		Scan(&r.id, &r.archived, &r.latestVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("scenario %q: %w", name, store.ErrNotFound)
	}
	return r, err
}

// nonNil returns b, or an empty slice for nil: NOT NULL bytea columns refuse nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
