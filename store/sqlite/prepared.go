package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// prepared holds the statements of the hot paths (appending event batches, reading the event
// logs) prepared once: SQLite parsed and planned each of them again at every call, a tenth of
// an ingesting server's CPU. database/sql prepares a *sql.Stmt on each connection it runs on,
// once, and a transaction takes the one of its connection (Tx.StmtContext).
type prepared struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepare prepares queries (at Open, before any transaction holds the writer's one
// connection: preparing on the database inside one would wait for it for ever).
func (p *prepared) prepare(ctx context.Context, queries ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*sql.Stmt{}
	}
	for _, q := range queries {
		st, err := p.db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		p.m[q] = st
	}
	return nil
}

// stmt is the statement of query when it was prepared, nil otherwise (the caller runs the
// query unprepared).
func (p *prepared) stmt(query string) *sql.Stmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[query]
}

// close closes the statements (before their database).
func (p *prepared) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for q, st := range p.m {
		errs = append(errs, st.Close())
		delete(p.m, q)
	}
	return errors.Join(errs...)
}

// preparedTx runs a write transaction's queries through the writer's prepared statements.
type preparedTx struct {
	tx *sql.Tx
	p  *prepared
}

func (q preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.p.stmt(query); st != nil {
		return q.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return q.tx.QueryRowContext(ctx, query, args...)
}

func (q preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.p.stmt(query); st != nil {
		return q.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return q.tx.QueryContext(ctx, query, args...)
}

func (q preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := q.p.stmt(query); st != nil {
		return q.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return q.tx.ExecContext(ctx, query, args...)
}

// preparedDB runs queries on a database (the readers) through its prepared statements.
type preparedDB struct{ p *prepared }

func (q preparedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.p.stmt(query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.p.db.QueryRowContext(ctx, query, args...)
}

func (q preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.p.stmt(query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.p.db.QueryContext(ctx, query, args...)
}
