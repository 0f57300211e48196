package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	for start := 0; start < len(results); {
		end := segmentEnd(results, start)
		for _, c := range encodeSegment(results[start:end], ids[start]) {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO result_chunks (scenario_id, segment_last, sink, first_id, last_id, result_count, results, created_at)
				 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				scenarioID, ids[end-1], c.sink, c.first, c.last, c.count, c.blob, created); err != nil {
				return nil, err
			}
		}
		start = end
	}
	return ids, nil
}

// ReadSinkResults implements store.Store.
func (s *Store) ReadSinkResults(ctx context.Context, scenario, sink string, after int64, limit int) ([]store.SinkResult, error) {
	list, err := s.readSinkResults(ctx, scenario, sink, after, check.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("reading sink results of %q after %d: %w", scenario, after, err)
	}
	return list, nil
}

// readSinkResults reads, in one read transaction, the chunks of the segments that end after
// after (of sink's chunks only when sink is set), in segment order, and stops at the first
// segment that completes the page (see resultchunks.go). The query leaves out the BLOB of a
// chunk of one result larger than segmentBytes (a segment alone): it is read by rowid once
// the page takes it, so a page never loads a large result it does not return.
func (s *Store) readSinkResults(ctx context.Context, scenario, sink string, after int64, limit int) ([]store.SinkResult, error) {
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	row, err := lookupScenario(ctx, tx, scenario)
	if err != nil {
		return nil, err
	}
	const columns = `SELECT rowid, segment_last, sink, first_id, last_id, result_count, octet_length(results),
		CASE WHEN result_count = 1 AND octet_length(results) > ? THEN NULL ELSE results END, created_at FROM result_chunks`
	var rows *sql.Rows
	if sink != "" {
		rows, err = tx.QueryContext(ctx, columns+`
			WHERE scenario_id = ? AND sink = ? AND segment_last > ? ORDER BY segment_last`, segmentBytes, row.id, sink, after)
	} else {
		rows, err = tx.QueryContext(ctx, columns+`
			WHERE scenario_id = ? AND segment_last > ? ORDER BY segment_last, sink`, segmentBytes, row.id, after)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	p := resultPage{after: after, limit: limit, fetch: func(rowid int64) (blob []byte, err error) {
		err = tx.QueryRowContext(ctx, `SELECT results FROM result_chunks WHERE rowid = ?`, rowid).Scan(&blob)
		return blob, err
	}}
	var segment []chunkCursor // the chunks of the segment being read
	for rows.Next() {
		var c chunkCursor
		var created int64
		if err := rows.Scan(&c.rowid, &c.segment, &c.sink, &c.first, &c.last, &c.count, &c.size, &c.blob, &created); err != nil {
			return nil, err
		}
		if len(segment) > 0 && segment[0].segment != c.segment {
			if err := p.add(segment); err != nil || p.done {
				return p.list, err
			}
			segment = segment[:0]
		}
		c.created = fromMicros(created)
		segment = append(segment, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(segment) > 0 {
		err = p.add(segment)
	}
	return p.list, err
}

// chunkCursor is a chunk being read: its next result is (id, value) while ok.
type chunkCursor struct {
	rowid       int64
	segment     int64
	sink        string
	first, last int64
	count       int
	size        int64  // bytes of the BLOB
	blob        []byte // nil until read, for a chunk of one large result
	created     time.Time
	results     resultReader

	id    int64
	value []byte
	ok    bool
}

func (c *chunkCursor) next() error {
	var err error
	c.id, c.value, c.ok, err = c.results.next()
	if err != nil {
		return fmt.Errorf("chunk of segment %d, sink %q: %w", c.segment, c.sink, err)
	}
	return nil
}

// resultPage is a page of ReadSinkResults being filled.
type resultPage struct {
	after int64
	limit int
	fetch func(rowid int64) ([]byte, error) // reads a chunk's BLOB
	used  int64                             // bytes of the values in list
	list  []store.SinkResult
	done  bool // the limit or the byte budget is reached
}

// add adds the results of a segment's chunks with IDs above after, in ID order, until the
// page is done.
func (p *resultPage) add(chunks []chunkCursor) error {
	if c := &chunks[0]; len(chunks) == 1 && c.blob == nil && c.first > p.after && len(p.list) > 0 &&
		p.used+c.size > store.MaxResultReadBytes {
		p.done = true // a large result alone (its value is its BLOB), past the budget: not read
		return nil
	}
	for i := range chunks {
		c := &chunks[i]
		if c.blob == nil {
			var err error
			if c.blob, err = p.fetch(c.rowid); err != nil {
				return fmt.Errorf("chunk of segment %d, sink %q: %w", c.segment, c.sink, err)
			}
		}
		var err error
		if c.results, err = newResultReader(c.first, c.last, c.count, c.blob); err != nil {
			return fmt.Errorf("chunk of segment %d, sink %q: %w", c.segment, c.sink, err)
		}
		if err := c.next(); err != nil {
			return err
		}
	}
	for {
		var c *chunkCursor // the chunk whose next result has the lowest ID
		for i := range chunks {
			if chunks[i].ok && (c == nil || chunks[i].id < c.id) {
				c = &chunks[i]
			}
		}
		if c == nil {
			return nil
		}
		if c.id > p.after {
			size := int64(len(c.value))
			if len(p.list) > 0 && p.used+size > store.MaxResultReadBytes {
				p.done = true
				return nil
			}
			p.used += size
			p.list = append(p.list, store.SinkResult{ID: c.id, Sink: c.sink, Value: c.value, CreatedAt: c.created})
			if len(p.list) >= p.limit {
				p.done = true
				return nil
			}
		}
		if err := c.next(); err != nil {
			return err
		}
	}
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
			b, refusal, err := appendChunk(ctx, preparedTx{tx, &s.writeStmts}, c.Req, at)
			if err != nil {
				return err
			}
			c.Res, c.Err = b, refusal
		}
		return nil
	})
}

// The statements of appending event batches and reading the event logs, prepared at Open.
const (
	sqlBatchByKey = `SELECT first_offset, event_count, accepted_at, batch_sha256 FROM event_batches
		WHERE scenario_id = ? AND source = ? AND batch_key = ?`
	sqlNextOffset = `INSERT INTO event_logs (scenario_id, source, next_offset) VALUES (?, ?, ?)
		ON CONFLICT (scenario_id, source) DO UPDATE SET next_offset = next_offset + excluded.next_offset
		RETURNING next_offset`
	sqlInsertChunk = `INSERT INTO event_chunks (scenario_id, source, last_offset, event_count, payloads, accepted_at) VALUES (?, ?, ?, ?, ?, ?)`
	sqlInsertBatch = `INSERT INTO event_batches (scenario_id, source, batch_key, first_offset, event_count, accepted_at, batch_sha256)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlReadChunks = `SELECT max(?, l.truncated_below), c.last_offset, c.event_count, c.payloads, c.accepted_at
		FROM event_logs l JOIN event_chunks c ON c.scenario_id = l.scenario_id AND c.source = l.source
		WHERE l.scenario_id = ? AND l.source = ? AND c.last_offset >= max(?, l.truncated_below)
		ORDER BY c.last_offset`
)

// appendChunk appends one request's events in tx, accepted at at (the batches of a group
// share it). refusal is the request's own error (nothing written); err a failure of the
// transaction.
func appendChunk(ctx context.Context, tx preparedTx, r check.Append, at time.Time) (b store.EventBatch, refusal, err error) {
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
		err := tx.QueryRowContext(ctx, sqlBatchByKey, row.id, r.Log.Source, r.Key).
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
	err = tx.QueryRowContext(ctx, sqlNextOffset, row.id, r.Log.Source, len(r.Payloads)).Scan(&next)
	if err != nil {
		return b, nil, err
	}
	b.AcceptedAt = at
	accepted := micros(b.AcceptedAt)
	b.FirstOffset = next - int64(len(r.Payloads))
	if _, err := tx.ExecContext(ctx, sqlInsertChunk,
		row.id, r.Log.Source, next-1, len(r.Payloads), check.EncodeChunk(r.Payloads), accepted); err != nil {
		return b, nil, err
	}
	if r.Key != "" {
		_, err = tx.ExecContext(ctx, sqlInsertBatch, row.id, r.Log.Source, r.Key, b.FirstOffset, len(r.Payloads), accepted, hash)
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
	read := preparedDB{&s.readStmts}
	row, err := lookupScenario(ctx, read, log.Scenario)
	if err != nil {
		return nil, err
	}
	rows, err := read.QueryContext(ctx, sqlReadChunks, from, row.id, log.Source, from)
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
// does not hold the write lock for long; pruneResultChunks the same for result_chunks, whose
// rows hold up to segmentBytes of values each.
const (
	pruneChunk        = 5000
	pruneResultChunks = 50 // at most 12.5 MiB of values a transaction
)

// PruneSinkResults implements store.Store.
func (s *Store) PruneSinkResults(ctx context.Context, before time.Time) (int64, error) {
	// The results of a chunk share its created_at: a chunk goes whole.
	n, err := s.prune(ctx, `DELETE FROM result_chunks WHERE rowid IN
		(SELECT rowid FROM result_chunks WHERE created_at < ? LIMIT ?) RETURNING result_count`, pruneResultChunks, micros(before))
	if err != nil {
		return n, fmt.Errorf("pruning sink results created before %v: %w", before, err)
	}
	return n, nil
}

// TrimSinkResults implements store.Store: the chunks of the newest segments whose bytes
// add up to at most keep are kept, and those of the newest segment whatever their bytes, the
// others deleted, pruneResultChunks a statement.
func (s *Store) TrimSinkResults(ctx context.Context, scenario string, keep int64) (deleted, kept int64, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("trimming the sink results of %q to %d bytes: %w", scenario, keep, err)
		}
	}()
	// Measured in a read transaction: the write connection, which every append waits for,
	// is not held while every chunk's size is read (300 ms for 200,000 chunks, review 140).
	var id, cut int64 = 0, -1
	err = func() error {
		tx, err := s.read.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		row, err := lookupScenario(ctx, tx, scenario)
		if err != nil {
			return err
		}
		id = row.id
		// The newest segment whose chunks, with the newer ones, pass keep: it and the older go.
		err = tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(segment_last), -1) FROM (
			SELECT segment_last, SUM(octet_length(results)) OVER (ORDER BY segment_last DESC, sink ROWS UNBOUNDED PRECEDING) AS upto
			FROM result_chunks WHERE scenario_id = ?) WHERE upto > ?
			AND segment_last < (SELECT MAX(segment_last) FROM result_chunks WHERE scenario_id = ?)`, id, keep, id).Scan(&cut)
		if err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(octet_length(results)), 0) FROM result_chunks
			WHERE scenario_id = ? AND segment_last > ?`, id, cut).Scan(&kept)
	}()
	if err != nil || cut < 0 {
		return 0, kept, err
	}
	deleted, err = s.prune(ctx, `DELETE FROM result_chunks WHERE rowid IN
		(SELECT rowid FROM result_chunks WHERE scenario_id = ? AND segment_last <= ? LIMIT ?) RETURNING result_count`,
		pruneResultChunks, id, cut)
	return deleted, kept, err
}

// SinkResultBytes implements store.Store, on the read pool.
func (s *Store) SinkResultBytes(ctx context.Context) (map[string]int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT s.name, t.bytes FROM scenarios s JOIN
		(SELECT scenario_id, SUM(octet_length(results)) AS bytes FROM result_chunks GROUP BY scenario_id) t
		ON t.scenario_id = s.id`)
	if err != nil {
		return nil, fmt.Errorf("measuring the sink results: %w", err)
	}
	defer rows.Close()
	sizes := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("measuring the sink results: %w", err)
		}
		sizes[name] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("measuring the sink results: %w", err)
	}
	return sizes, nil
}

// PruneCheckpoints implements store.Store.
func (s *Store) PruneCheckpoints(ctx context.Context) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE deployment_id IN (
		SELECT d.id FROM deployments d WHERE d.status NOT IN ('DEPLOYING', 'RUNNING')
		AND EXISTS (SELECT 1 FROM deployments n JOIN checkpoints c ON c.deployment_id = n.id
			WHERE n.scenario_id = d.scenario_id AND n.id > d.id))`)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning the checkpoints of ended deployments: %w", err)
	}
	return n, nil
}

// PruneEventBatches implements store.Store.
func (s *Store) PruneEventBatches(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.prune(ctx, `DELETE FROM event_batches WHERE (scenario_id, source, batch_key) IN
		(SELECT scenario_id, source, batch_key FROM event_batches WHERE accepted_at < ? LIMIT ?) RETURNING 1`, pruneChunk, micros(before))
	if err != nil {
		return n, fmt.Errorf("pruning event batch keys accepted before %v: %w", before, err)
	}
	return n, nil
}

// prune runs a chunked delete (arguments: args, then limit, the chunk size) that returns a
// count per row it deletes (RETURNING), until a chunk deletes fewer rows than limit, and
// returns the sum of the counts.
func (s *Store) prune(ctx context.Context, query string, limit int64, args ...any) (int64, error) {
	args = append(args, limit)
	var total int64
	for {
		var rowsDeleted, n int64
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			rowsDeleted, n = 0, 0
			rows, err := tx.QueryContext(ctx, query, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var count int64
				if err := rows.Scan(&count); err != nil {
					return err
				}
				rowsDeleted, n = rowsDeleted+1, n+count
			}
			return rows.Err()
		})
		if err != nil {
			return total, err
		}
		total += n
		if rowsDeleted < limit {
			return total, nil
		}
	}
}
