package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
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
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ids, err = appendSinkResults(ctx, tx, `name = $2`, scenario, results)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("appending sink results of %q: %w", scenario, err)
	}
	return ids, nil
}

// appendSinkResults appends results (at least one) to the scenario whose row matches where
// (with arg as $2) and returns their IDs.
func appendSinkResults(ctx context.Context, tx pgx.Tx, where string, arg any, results []store.NewSinkResult) ([]int64, error) {
	// The UPDATE locks the scenario row until commit, so IDs are handed out in commit
	// order and a cursor reader never sees a higher ID before a lower one.
	var scenarioID, last int64
	err := tx.QueryRow(ctx,
		`UPDATE scenarios SET last_sink_result_id = last_sink_result_id + $1 WHERE `+where+`
		 RETURNING id, last_sink_result_id`, len(results), arg).Scan(&scenarioID, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("scenario: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	created := now()
	first := last - int64(len(results)) + 1
	ids := make([]int64, len(results))
	rows := make([][]any, len(results))
	for i, r := range results {
		ids[i] = first + int64(i)
		rows[i] = []any{scenarioID, ids[i], r.Sink, string(r.Value), created}
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"sink_results"},
		[]string{"scenario_id", "id", "sink", "value", "created_at"}, pgx.CopyFromRows(rows))
	if err != nil {
		return nil, err
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

func (s *Store) readSinkResults(ctx context.Context, scenario, sink string, after int64, limit int) ([]store.SinkResult, error) {
	row, err := lookupScenario(ctx, s.pool, scenario, "")
	if err != nil {
		return nil, err
	}
	last, n, err := lastWithin(ctx, s.pool, store.MaxResultReadBytes,
		`SELECT id, octet_length(value::text) FROM sink_results
		 WHERE scenario_id = $1 AND id > $2 AND ($3 = '' OR sink = $3)
		 ORDER BY id LIMIT $4`, row.id, after, sink, limit)
	if err != nil || n == 0 {
		return nil, err
	}
	rows, err := s.pool.Query(ctx,
		`SELECT id, sink, value::text, created_at FROM sink_results
		 WHERE scenario_id = $1 AND id > $2 AND id <= $3 AND ($4 = '' OR sink = $4)
		 ORDER BY id LIMIT $5`, row.id, after, last, sink, n)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(row pgx.Row) (store.SinkResult, error) {
		var r store.SinkResult
		err := row.Scan(&r.ID, &r.Sink, (*[]byte)(&r.Value), &r.CreatedAt)
		r.CreatedAt = r.CreatedAt.UTC()
		return r, err
	})
}

// AppendEvents implements store.Store. Concurrent appends commit together (group commit,
// commitAppends): one transaction, one WAL flush, for every append waiting while the previous
// one committed; each batch is one row of event_chunks.
func (s *Store) AppendEvents(ctx context.Context, log store.EventLog, payloads [][]byte) ([]int64, error) {
	return check.AppendEvents(check.Append{Ctx: ctx, Log: log, Payloads: payloads}, s.appends.Do)
}

// AppendEventBatch implements store.Store, as AppendEvents does.
func (s *Store) AppendEventBatch(ctx context.Context, log store.EventLog, key string, payloads [][]byte) (store.EventBatch, error) {
	return check.AppendEventBatch(check.Append{Ctx: ctx, Log: log, Key: key, Payloads: payloads}, s.appends.Do)
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
// order, until limit events or the byte budget. The first query finds the scenario by name
// itself; only when it finds no chunk does a second one tell an unknown scenario from a log
// with nothing to read.
func (s *Store) readEvents(ctx context.Context, log store.EventLog, from int64, limit int) ([]store.Event, error) {
	var list []store.Event
	var used int64
	for {
		n, done, err := s.readChunks(ctx, log, from, limit, &list, &used)
		if err == nil && len(list) == 0 {
			_, err = lookupScenario(ctx, s.pool, log.Scenario, "")
		}
		if err != nil || done || n < chunksPerQuery {
			return list, err
		}
		from = list[len(list)-1].Offset + 1
	}
}

// chunksPerQuery is how many chunks one query of readEvents asks for: closing a query
// early still receives all its rows, so a read asks for a few at a time.
const chunksPerQuery = 32

// readChunks appends to list the events of up to chunksPerQuery chunks of log from offset
// from on, and returns how many chunks it read and whether the read is complete.
func (s *Store) readChunks(ctx context.Context, log store.EventLog, from int64, limit int,
	list *[]store.Event, used *int64) (n int, done bool, err error) {
	rows, err := s.pool.Query(ctx,
		`SELECT greatest($1::bigint, l.truncated_below), c.last_offset, c.event_count, c.payloads, c.accepted_at
		 FROM scenarios s JOIN event_logs l ON l.scenario_id = s.id
		   JOIN event_chunks c ON c.scenario_id = l.scenario_id AND c.source = l.source
		 WHERE s.name = $2 AND l.source = $3 AND c.last_offset >= greatest($1::bigint, l.truncated_below)
		 ORDER BY c.last_offset LIMIT $4`, from, log.Scenario, log.Source, chunksPerQuery)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var start, last int64
		var count int
		var blob []byte
		var accepted time.Time
		if err := rows.Scan(&start, &last, &count, &blob, &accepted); err != nil {
			return n, false, err
		}
		n++
		*list, done, err = check.ChunkEvents(*list, used, last, count, blob, accepted.UTC(), start, limit, store.MaxEventReadBytes)
		if err != nil || done {
			return n, done, err
		}
	}
	return n, false, rows.Err()
}

// lastWithin runs query, whose rows are (key, size in bytes) in key order, and returns the key
// of the last row a read bounded by budget bytes takes and how many rows it takes: the rows
// while their sizes add up to at most budget, and always the first. octet_length of a bytea,
// or of a json value as text, is the value's raw size, which PostgreSQL knows without
// detoasting it, so only the rows a read returns are ever sent (by a second query, up to key).
func lastWithin(ctx context.Context, q querier, budget int64, query string, args ...any) (last int64, n int, err error) {
	rows, err := q.Query(ctx, query, args...)
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
	n, err := s.truncateEvents(ctx, log, below)
	if err != nil {
		return 0, fmt.Errorf("truncating events of %q/%q below %d: %w", log.Scenario, log.Source, below, err)
	}
	return n, nil
}

func (s *Store) truncateEvents(ctx context.Context, log store.EventLog, below int64) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := lookupScenario(ctx, tx, log.Scenario, "")
		if err != nil {
			return err
		}
		// Offsets are consecutive from 0 and never reused: the events below the new
		// truncation point and at or above the old one are the ones it deletes. Chunks wholly
		// below it go; a chunk across it stays, its events below it no longer read.
		var next, old int64
		err = tx.QueryRow(ctx, `SELECT next_offset, truncated_below FROM event_logs
			WHERE scenario_id = $1 AND source = $2 FOR UPDATE`, row.id, log.Source).Scan(&next, &old)
		if errors.Is(err, pgx.ErrNoRows) {
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
		if _, err := tx.Exec(ctx, `UPDATE event_logs SET truncated_below = $1 WHERE scenario_id = $2 AND source = $3`,
			to, row.id, log.Source); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM event_chunks WHERE scenario_id = $1 AND source = $2 AND last_offset < $3`,
			row.id, log.Source, to)
		return err
	})
	return n, err
}

// pruneChunk is how many rows one statement of a prune deletes, so that a large prune
// is a series of short transactions.
const pruneChunk = 5000

// PruneSinkResults implements store.Store.
func (s *Store) PruneSinkResults(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.prune(ctx, `DELETE FROM sink_results WHERE (scenario_id, id) IN
		(SELECT scenario_id, id FROM sink_results WHERE created_at < $1 LIMIT $2)`, before)
	if err != nil {
		return n, fmt.Errorf("pruning sink results created before %v: %w", before, err)
	}
	return n, nil
}

// TrimSinkResults implements store.Store: the newest results whose values add up to at most
// keep bytes are kept, and the newest whatever its bytes, the others deleted, pruneChunk a
// statement. A result's bytes are its value as stored (pg_column_size: compressed when
// large, read without decompressing it) and 32 for its row (a row's header and id, sink and
// time: tiny results took many times their JSON on disk, review 140).
func (s *Store) TrimSinkResults(ctx context.Context, scenario string, keep int64) (deleted, kept int64, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("trimming the sink results of %q to %d bytes: %w", scenario, keep, err)
		}
	}()
	row, err := lookupScenario(ctx, s.pool, scenario, "")
	if err != nil {
		return 0, 0, err
	}
	var cut int64
	// The newest result that, with the newer ones, passes keep: it and the older go.
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(id), -1) FROM (
		SELECT id, SUM(pg_column_size(value) + 32) OVER (ORDER BY id DESC ROWS UNBOUNDED PRECEDING) AS upto
		FROM sink_results WHERE scenario_id = $1) t WHERE upto > $2
		AND id < (SELECT MAX(id) FROM sink_results WHERE scenario_id = $1)`, row.id, keep).Scan(&cut); err != nil {
		return 0, 0, err
	}
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(pg_column_size(value) + 32), 0) FROM sink_results
		WHERE scenario_id = $1 AND id > $2`, row.id, cut).Scan(&kept); err != nil {
		return 0, 0, err
	}
	for cut >= 0 {
		tag, err := s.pool.Exec(ctx, `DELETE FROM sink_results WHERE (scenario_id, id) IN
			(SELECT scenario_id, id FROM sink_results WHERE scenario_id = $1 AND id <= $2 LIMIT $3)`, row.id, cut, pruneChunk)
		if err != nil {
			return deleted, kept, err
		}
		deleted += tag.RowsAffected()
		if tag.RowsAffected() < pruneChunk {
			break
		}
	}
	return deleted, kept, nil
}

// SinkResultBytes implements store.Store.
func (s *Store) SinkResultBytes(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.name, t.bytes FROM scenarios s JOIN
		(SELECT scenario_id, SUM(pg_column_size(value) + 32)::bigint AS bytes FROM sink_results GROUP BY scenario_id) t
		ON t.scenario_id = s.id`)
	if err != nil {
		return nil, fmt.Errorf("measuring the sink results: %w", err)
	}
	sizes := map[string]int64{}
	var name string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		sizes[name] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("measuring the sink results: %w", err)
	}
	return sizes, nil
}

// PruneCheckpoints implements store.Store.
func (s *Store) PruneCheckpoints(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM checkpoints WHERE deployment_id IN (
		SELECT d.id FROM deployments d WHERE d.status NOT IN ('DEPLOYING', 'RUNNING')
		AND EXISTS (SELECT 1 FROM deployments n JOIN checkpoints c ON c.deployment_id = n.id
			WHERE n.scenario_id = d.scenario_id AND n.id > d.id))`)
	if err != nil {
		return 0, fmt.Errorf("pruning the checkpoints of ended deployments: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PruneEventBatches implements store.Store.
func (s *Store) PruneEventBatches(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.prune(ctx, `DELETE FROM event_batches WHERE (scenario_id, source, batch_key) IN
		(SELECT scenario_id, source, batch_key FROM event_batches WHERE accepted_at < $1 LIMIT $2)`, before)
	if err != nil {
		return n, fmt.Errorf("pruning event batch keys accepted before %v: %w", before, err)
	}
	return n, nil
}

// prune runs a chunked delete (arguments: the bound, then the chunk size) until a chunk
// deletes fewer rows than it may.
func (s *Store) prune(ctx context.Context, query string, before time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, query, before, pruneChunk)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneChunk {
			return total, nil
		}
	}
}
