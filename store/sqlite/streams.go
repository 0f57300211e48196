package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
	"github.com/scenario-server/scenario-server/store/internal/group"
)

// AppendSinkResults implements store.Store.
func (s *Store) AppendSinkResults(ctx context.Context, scenario string, results []store.NewSinkResult) ([]int64, error) {
	if err := check.SinkResults(results); err != nil {
		return nil, fmt.Errorf("appending sink results of %q: %w", scenario, err)
	}
	if len(results) == 0 {
		return nil, nil
	}
	var ids []int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		ids, err = appendSinkResults(ctx, tx, `name = ?`, scenario, results)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("appending sink results of %q: %w", scenario, err)
	}
	return ids, nil
}

// appendSinkResults appends results (at least one) to the scenario whose row matches where
// (with arg) and returns their IDs.
func appendSinkResults(ctx context.Context, tx *sql.Tx, where string, arg any, results []store.NewSinkResult) ([]int64, error) {
	var scenarioID, last int64
	err := tx.QueryRowContext(ctx,
		`UPDATE scenarios SET last_sink_result_id = last_sink_result_id + ? WHERE `+where+`
		 RETURNING id, last_sink_result_id`, len(results), arg).Scan(&scenarioID, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("scenario: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	created := micros(now())
	first := last - int64(len(results)) + 1
	ids := make([]int64, len(results))
	for i := range ids {
		ids[i] = first + int64(i)
	}
	// Many rows a statement: the statements, not the rows, are what costs.
	var stmt *sql.Stmt
	stmtRows := 0
	defer func() {
		if stmt != nil {
			stmt.Close()
		}
	}()
	args := make([]any, 0, 5*resultsPerInsert)
	for start := 0; start < len(results); start += resultsPerInsert {
		part := results[start:min(start+resultsPerInsert, len(results))]
		if len(part) != stmtRows {
			if stmt != nil {
				stmt.Close()
			}
			q := `INSERT INTO sink_results (scenario_id, id, sink, value, created_at) VALUES (?, ?, ?, ?, ?)` +
				strings.Repeat(`, (?, ?, ?, ?, ?)`, len(part)-1)
			if stmt, err = tx.PrepareContext(ctx, q); err != nil {
				return nil, err
			}
			stmtRows = len(part)
		}
		args = args[:0]
		for i, r := range part {
			args = append(args, scenarioID, ids[start+i], r.Sink, string(r.Value), created)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// resultsPerInsert is how many results one INSERT statement writes (5 parameters each).
const resultsPerInsert = 200

// ReadSinkResults implements store.Store.
func (s *Store) ReadSinkResults(ctx context.Context, scenario, sink string, after int64, limit int) ([]store.SinkResult, error) {
	list, err := s.readSinkResults(ctx, scenario, sink, after, check.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("reading sink results of %q after %d: %w", scenario, after, err)
	}
	return list, nil
}

func (s *Store) readSinkResults(ctx context.Context, scenario, sink string, after int64, limit int) ([]store.SinkResult, error) {
	row, err := lookupScenario(ctx, s.read, scenario)
	if err != nil {
		return nil, err
	}
	last, n, err := lastWithin(ctx, s.read, store.MaxResultReadBytes,
		`SELECT id, octet_length(value) FROM sink_results
		 WHERE scenario_id = ? AND id > ? AND (? = '' OR sink = ?)
		 ORDER BY id LIMIT ?`, row.id, after, sink, sink, limit)
	if err != nil || n == 0 {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx,
		`SELECT id, sink, value, created_at FROM sink_results
		 WHERE scenario_id = ? AND id > ? AND id <= ? AND (? = '' OR sink = ?)
		 ORDER BY id LIMIT ?`, row.id, after, last, sink, sink, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []store.SinkResult
	for rows.Next() {
		var r store.SinkResult
		var created int64
		if err := rows.Scan(&r.ID, &r.Sink, (*[]byte)(&r.Value), &created); err != nil {
			return nil, err
		}
		r.CreatedAt = fromMicros(created)
		list = append(list, r)
	}
	return list, rows.Err()
}

// AppendEvents implements store.Store. Concurrent appends commit together (group commit,
// commitAppends): one transaction, one fsync, for every append waiting while the previous
// one committed; each batch is one row of event_chunks.
func (s *Store) AppendEvents(ctx context.Context, log store.EventLog, payloads [][]byte) ([]int64, error) {
	return check.AppendEvents(check.Append{Ctx: ctx, Log: log, Payloads: payloads}, s.appends.Do)
}

// AppendEventBatch implements store.Store, as AppendEvents does.
func (s *Store) AppendEventBatch(ctx context.Context, log store.EventLog, key string, payloads [][]byte) (store.EventBatch, error) {
	return check.AppendEventBatch(check.Append{Ctx: ctx, Log: log, Key: key, Payloads: payloads}, s.appends.Do)
}

// commitAppends runs a group of appends in one transaction. An append refused on its own (an
// unknown scenario, a reused key) writes nothing and leaves the others be.
func (s *Store) commitAppends(calls []*group.Call[check.Append, store.EventBatch]) error {
	ctx := context.WithoutCancel(calls[0].Req.Ctx)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		at := now() // the time of the group's commit
		for _, c := range calls {
			b, refusal, err := appendChunk(ctx, tx, c.Req, at)
			if err != nil {
				return err
			}
			c.Res, c.Err = b, refusal
		}
		return nil
	})
}

// appendChunk appends one request's events in tx, accepted at at (the batches of a group
// share it). refusal is the request's own error (nothing written); err a failure of the
// transaction.
func appendChunk(ctx context.Context, tx *sql.Tx, r check.Append, at time.Time) (b store.EventBatch, refusal, err error) {
	b = store.EventBatch{Key: r.Key, Count: len(r.Payloads)}
	row, err := lookupScenario(ctx, tx, r.Log.Scenario)
	if errors.Is(err, store.ErrNotFound) {
		return b, err, nil
	}
	if err != nil {
		return b, nil, err
	}
	var hash []byte
	if r.Key != "" {
		hash = check.BatchHash(r.Payloads)
		// The write transaction is IMMEDIATE: no other append runs between this check and
		// the insert below.
		var first, accepted int64
		var count int
		var stored []byte
		err := tx.QueryRowContext(ctx,
			`SELECT first_offset, event_count, accepted_at, batch_sha256 FROM event_batches
			 WHERE scenario_id = ? AND source = ? AND batch_key = ?`, row.id, r.Log.Source, r.Key).
			Scan(&first, &count, &accepted, &stored)
		switch {
		case err == nil:
			if err := check.SameBatch(count, stored, len(r.Payloads), hash); err != nil {
				return b, err, nil
			}
			b.FirstOffset, b.AcceptedAt, b.Duplicate = first, fromMicros(accepted), true
			return b, nil, nil
		case !errors.Is(err, sql.ErrNoRows):
			return b, nil, err
		}
	}
	var next int64
	err = tx.QueryRowContext(ctx,
		`INSERT INTO event_logs (scenario_id, source, next_offset) VALUES (?, ?, ?)
		 ON CONFLICT (scenario_id, source) DO UPDATE SET next_offset = next_offset + excluded.next_offset
		 RETURNING next_offset`, row.id, r.Log.Source, len(r.Payloads)).Scan(&next)
	if err != nil {
		return b, nil, err
	}
	b.AcceptedAt = at
	accepted := micros(b.AcceptedAt)
	b.FirstOffset = next - int64(len(r.Payloads))
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO event_chunks (scenario_id, source, last_offset, event_count, payloads, accepted_at) VALUES (?, ?, ?, ?, ?, ?)`,
		row.id, r.Log.Source, next-1, len(r.Payloads), check.EncodeChunk(r.Payloads), accepted); err != nil {
		return b, nil, err
	}
	if r.Key != "" {
		_, err = tx.ExecContext(ctx,
			`INSERT INTO event_batches (scenario_id, source, batch_key, first_offset, event_count, accepted_at, batch_sha256)
			 VALUES (?, ?, ?, ?, ?, ?, ?)`, row.id, r.Log.Source, r.Key, b.FirstOffset, len(r.Payloads), accepted, hash)
	}
	return b, nil, err
}

// ReadEvents implements store.Store.
func (s *Store) ReadEvents(ctx context.Context, log store.EventLog, from int64, limit int) ([]store.Event, error) {
	list, err := s.readEvents(ctx, log, from, check.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("reading events of %q/%q from %d: %w", log.Scenario, log.Source, from, err)
	}
	return list, nil
}

// readEvents reads the chunks that hold offsets from max(from, the truncation point) on, in
// order, until limit events or the byte budget.
func (s *Store) readEvents(ctx context.Context, log store.EventLog, from int64, limit int) ([]store.Event, error) {
	row, err := lookupScenario(ctx, s.read, log.Scenario)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx,
		`SELECT max(?, l.truncated_below), c.last_offset, c.event_count, c.payloads, c.accepted_at
		 FROM event_logs l JOIN event_chunks c ON c.scenario_id = l.scenario_id AND c.source = l.source
		 WHERE l.scenario_id = ? AND l.source = ? AND c.last_offset >= max(?, l.truncated_below)
		 ORDER BY c.last_offset`, from, row.id, log.Source, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []store.Event
	var used int64
	for rows.Next() {
		var start, last, accepted int64
		var count int
		var blob []byte
		if err := rows.Scan(&start, &last, &count, &blob, &accepted); err != nil {
			return nil, err
		}
		var done bool
		list, done, err = check.ChunkEvents(list, &used, last, count, blob, fromMicros(accepted), start, limit, store.MaxEventReadBytes)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return list, rows.Err()
}

// lastWithin runs query, whose rows are (key, size in bytes) in key order, and returns the key
// of the last row a read bounded by budget bytes takes and how many rows it takes: the rows
// while their sizes add up to at most budget, and always the first. The sizes come from
// octet_length, which SQLite answers from the record header without reading the value, so
// only the rows a read returns are ever loaded (by a second query, up to key).
func lastWithin(ctx context.Context, q queryer, budget int64, query string, args ...any) (last int64, n int, err error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	var used int64
	for rows.Next() {
		var key, size int64
		if err := rows.Scan(&key, &size); err != nil {
			return 0, 0, err
		}
		if n > 0 && used+size > budget {
			break
		}
		last, used, n = key, used+size, n+1
	}
	return last, n, rows.Err()
}

// TruncateEvents implements store.Store.
func (s *Store) TruncateEvents(ctx context.Context, log store.EventLog, below int64) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		row, err := lookupScenario(ctx, tx, log.Scenario)
		if err != nil {
			return err
		}
		// Offsets are consecutive from 0 and never reused: the events below the new
		// truncation point and at or above the old one are the ones it deletes. Chunks wholly
		// below it go; a chunk across it stays, its events below it no longer read.
		var next, old int64
		err = tx.QueryRowContext(ctx, `SELECT next_offset, truncated_below FROM event_logs WHERE scenario_id = ? AND source = ?`,
			row.id, log.Source).Scan(&next, &old)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		to := min(below, next)
		if to <= old {
			return nil
		}
		n = to - old
		if _, err := tx.ExecContext(ctx, `UPDATE event_logs SET truncated_below = ? WHERE scenario_id = ? AND source = ?`,
			to, row.id, log.Source); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM event_chunks WHERE scenario_id = ? AND source = ? AND last_offset < ?`,
			row.id, log.Source, to)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("truncating events of %q/%q below %d: %w", log.Scenario, log.Source, below, err)
	}
	return n, nil
}

// pruneChunk is how many rows one statement of a prune deletes, so that a large prune
// does not hold the write lock for long.
const pruneChunk = 5000

// PruneSinkResults implements store.Store.
func (s *Store) PruneSinkResults(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.prune(ctx, `DELETE FROM sink_results WHERE (scenario_id, id) IN
		(SELECT scenario_id, id FROM sink_results WHERE created_at < ? LIMIT ?)`, micros(before))
	if err != nil {
		return n, fmt.Errorf("pruning sink results created before %v: %w", before, err)
	}
	return n, nil
}

// PruneEventBatches implements store.Store.
func (s *Store) PruneEventBatches(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.prune(ctx, `DELETE FROM event_batches WHERE (scenario_id, source, batch_key) IN
		(SELECT scenario_id, source, batch_key FROM event_batches WHERE accepted_at < ? LIMIT ?)`, micros(before))
	if err != nil {
		return n, fmt.Errorf("pruning event batch keys accepted before %v: %w", before, err)
	}
	return n, nil
}

// prune runs a chunked delete (arguments: the bound, then the chunk size) until a chunk
// deletes fewer rows than it may.
func (s *Store) prune(ctx context.Context, query string, bound int64) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, query, bound, pruneChunk)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		total += n
		if err != nil || n < pruneChunk {
			return total, err
		}
	}
}
