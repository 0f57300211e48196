// Package sqlite is the store.Store kept in one SQLite file in the server's data directory
// (modernc.org/sqlite: pure Go, no cgo). It is the default store.
//
// The file is in WAL mode, so reads run concurrently with the one writer. Writes go through a
// single connection whose transactions begin IMMEDIATE: they are serialized in this process,
// and wait up to BusyTimeout for writers of other processes sharing the file.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/scenario-server/scenario-server/migrations"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
	"github.com/scenario-server/scenario-server/store/internal/group"
)

// FileName is the database file's name inside the data directory. SQLite keeps its WAL and
// shared-memory files beside it (FileName + "-wal", "-shm").
const FileName = "scenario-server.db"

// BusyTimeout is how long a statement waits for a lock held by another connection (another
// process, or a checkpointing reader) before failing with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// maxReaders is the size of the read connection pool.
const maxReaders = 4

// Store is the SQLite store.Store. Create it with Open.
type Store struct {
	write *sql.DB // one connection; transactions begin IMMEDIATE
	read  *sql.DB // query_only connections

	closeOnce sync.Once
	closeErr  error

	// full: the latest write transaction failed with SQLITE_FULL (see classify).
	full atomic.Bool

	// appends commits concurrent event appends in one transaction (appendEvents).
	appends group.Committer[check.Append, store.EventBatch]

	// writeStmts and readStmts are the hot paths' statements, prepared once (prepared.go).
	writeStmts, readStmts prepared
}

var _ store.Store = (*Store)(nil)

// Open opens (creating them when missing) the data directory dataDir, mode 0o750, and the
// database file FileName in it, and applies the pending migrations of migrations.SQLite().
// The caller closes the store with Close.
// Errors: the directory or file cannot be created or opened, the file is not a SQLite
// database, or a migration fails (the failed migration is rolled back).
func Open(ctx context.Context, dataDir string) (*Store, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dataDir, FileName))
	if err != nil {
		return nil, fmt.Errorf("locating database file: %w", err)
	}
	// The database holds token hashes, the audit log and every event: readable by the server's
	// user only. SQLite gives its -wal and -shm files the database file's mode.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating database file: %w", err)
	}
	f.Close()
	pragmas := url.Values{"_pragma": {
		fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()),
		"journal_mode(WAL)",
		"foreign_keys(1)",
		// FULL: a commit survives power loss too, as event ingestion promises.
		"synchronous(FULL)",
	}}
	writeQuery := url.Values{"_txlock": {"immediate"}}
	readQuery := url.Values{"_query_only": {"1"}}
	for k, v := range pragmas {
		writeQuery[k] = v
		readQuery[k] = v
	}
	dsn := func(q url.Values) string {
		return (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
	}

	write, err := sql.Open("sqlite", dsn(writeQuery))
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(0)
	read, err := sql.Open("sqlite", dsn(readQuery))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	read.SetMaxOpenConns(maxReaders)
	read.SetMaxIdleConns(maxReaders)
	s := &Store{write: write, read: read}
	s.writeStmts.db, s.readStmts.db = write, read
	s.appends.Commit = s.commitAppends

	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := errors.Join(s.writeStmts.prepare(ctx, sqlLookupScenario, sqlBatchByKey, sqlNextOffset, sqlInsertChunk, sqlInsertBatch),
		s.readStmts.prepare(ctx, sqlLookupScenario, sqlReadChunks)); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening %s: preparing statements: %w", path, err)
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	provider, err := goose.NewProvider(goose.DialectSQLite3, s.write, migrations.SQLite(),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	return nil
}

// Close closes the database. Calls after the first return nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.readStmts.close(), s.writeStmts.close(), s.read.Close(), s.write.Close())
	})
	return s.closeErr
}

// inTx runs fn in a write transaction and commits it when fn returns nil. A failure because
// the database is full wraps store.ErrStoreFull.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return s.classify(err)
	}
	if err := fn(tx); err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return s.classify(errors.Join(err, fmt.Errorf("rolling back: %w", rbErr)))
		}
		if isFull(err) {
			return s.classify(err)
		}
		return err // the call's own refusal (not found, conflict): says nothing of the disk
	}
	return s.classify(tx.Commit())
}

// queryer is what *sql.DB and *sql.Tx share.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// now is the time the store writes: UTC, microseconds (what PostgreSQL keeps too).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func isConstraint(err error, code int) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code() == code
}

func isUnique(err error) bool { return isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) }

// scenarioRow is the part of a scenario row that writes check.
type scenarioRow struct {
	id            int64
	archived      bool
	latestVersion int
}

// lookupScenario reads the scenario name's row; it returns an error wrapping store.ErrNotFound
// when there is none.
// sqlLookupScenario is lookupScenario's statement (prepared at Open).
const sqlLookupScenario = `SELECT id, archived, latest_version FROM scenarios WHERE name = ?`

func lookupScenario(ctx context.Context, q queryer, name string) (scenarioRow, error) {
	var r scenarioRow
	err := q.QueryRowContext(ctx, sqlLookupScenario, name).
		Scan(&r.id, &r.archived, &r.latestVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("scenario %q: %w", name, store.ErrNotFound)
	}
	return r, err
}

// nonNil returns b, or an empty slice for nil: NOT NULL BLOB columns refuse nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
