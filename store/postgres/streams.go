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
	ids := make([]int64, len(results))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The UPDATE locks the scenario row until commit, so IDs are handed out in commit
		// order and a cursor reader never sees a higher ID before a lower one.
		var scenarioID, last int64
		err := tx.QueryRow(ctx,
			`UPDATE scenarios SET last_sink_result_id = last_sink_result_id + $1 WHERE name = $2
			 RETURNING id, last_sink_result_id`, len(results), scenario).Scan(&scenarioID, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("scenario: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		created := now()
		first := last - int64(len(results)) + 1
		rows := make([][]any, len(results))
		for i, r := range results {
			ids[i] = first + int64(i)
			rows[i] = []any{scenarioID, ids[i], r.Sink, string(r.Value), created}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"sink_results"},
			[]string{"scenario_id", "id", "sink", "value", "created_at"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("appending sink results of %q: %w", scenario, err)
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
	rows, err := s.pool.Query(ctx,
		`SELECT id, sink, value::text, created_at FROM sink_results
		 WHERE scenario_id = $1 AND id > $2 AND ($3 = '' OR sink = $3)
		 ORDER BY id LIMIT $4`, row.id, after, sink, limit)
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

// AppendEvents implements store.Store.
func (s *Store) AppendEvents(ctx context.Context, log store.EventLog, payloads [][]byte) ([]int64, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	offsets := make([]int64, len(payloads))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := lookupScenario(ctx, tx, log.Scenario, "")
		if err != nil {
			return err
		}
		// The upsert locks the log's row until commit: offsets are handed out in commit order.
		var next int64
		err = tx.QueryRow(ctx,
			`INSERT INTO event_logs AS l (scenario_id, source, next_offset) VALUES ($1, $2, $3)
			 ON CONFLICT (scenario_id, source) DO UPDATE SET next_offset = l.next_offset + excluded.next_offset
			 RETURNING next_offset`, row.id, log.Source, len(payloads)).Scan(&next)
		if err != nil {
			return err
		}
		accepted := now()
		first := next - int64(len(payloads))
		rows := make([][]any, len(payloads))
		for i, p := range payloads {
			offsets[i] = first + int64(i)
			rows[i] = []any{row.id, log.Source, offsets[i], nonNil(p), accepted}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"events"},
			[]string{"scenario_id", "source", "event_offset", "payload", "accepted_at"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("appending %d events to %q/%q: %w", len(payloads), log.Scenario, log.Source, err)
	}
	return offsets, nil
}

// ReadEvents implements store.Store.
func (s *Store) ReadEvents(ctx context.Context, log store.EventLog, from int64, limit int) ([]store.Event, error) {
	list, err := s.readEvents(ctx, log, from, check.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("reading events of %q/%q from %d: %w", log.Scenario, log.Source, from, err)
	}
	return list, nil
}

func (s *Store) readEvents(ctx context.Context, log store.EventLog, from int64, limit int) ([]store.Event, error) {
	row, err := lookupScenario(ctx, s.pool, log.Scenario, "")
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx,
		`SELECT event_offset, payload, accepted_at FROM events
		 WHERE scenario_id = $1 AND source = $2 AND event_offset >= $3
		 ORDER BY event_offset LIMIT $4`, row.id, log.Source, from, limit)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(row pgx.Row) (store.Event, error) {
		var e store.Event
		var accepted time.Time
		err := row.Scan(&e.Offset, &e.Payload, &accepted)
		e.AcceptedAt = accepted.UTC()
		return e, err
	})
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
	row, err := lookupScenario(ctx, s.pool, log.Scenario, "")
	if err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx,
		`DELETE FROM events WHERE scenario_id = $1 AND source = $2 AND event_offset < $3`, row.id, log.Source, below)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
