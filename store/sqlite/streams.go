package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var scenarioID, last int64
		err := tx.QueryRowContext(ctx,
			`UPDATE scenarios SET last_sink_result_id = last_sink_result_id + ? WHERE name = ?
			 RETURNING id, last_sink_result_id`, len(results), scenario).Scan(&scenarioID, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("scenario: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx,
			`INSERT INTO sink_results (scenario_id, id, sink, value, created_at) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		created := micros(now())
		first := last - int64(len(results)) + 1
		for i, r := range results {
			ids[i] = first + int64(i)
			if _, err := stmt.ExecContext(ctx, scenarioID, ids[i], r.Sink, string(r.Value), created); err != nil {
				return err
			}
		}
		return nil
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
	row, err := lookupScenario(ctx, s.read, scenario)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx,
		`SELECT id, sink, value, created_at FROM sink_results
		 WHERE scenario_id = ? AND id > ? AND (? = '' OR sink = ?)
		 ORDER BY id LIMIT ?`, row.id, after, sink, sink, limit)
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

// AppendEvents implements store.Store.
func (s *Store) AppendEvents(ctx context.Context, log store.EventLog, payloads [][]byte) ([]int64, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	offsets := make([]int64, len(payloads))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		row, err := lookupScenario(ctx, tx, log.Scenario)
		if err != nil {
			return err
		}
		var next int64
		err = tx.QueryRowContext(ctx,
			`INSERT INTO event_logs (scenario_id, source, next_offset) VALUES (?, ?, ?)
			 ON CONFLICT (scenario_id, source) DO UPDATE SET next_offset = next_offset + excluded.next_offset
			 RETURNING next_offset`, row.id, log.Source, len(payloads)).Scan(&next)
		if err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx,
			`INSERT INTO events (scenario_id, source, event_offset, payload, accepted_at) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		accepted := micros(now())
		first := next - int64(len(payloads))
		for i, p := range payloads {
			offsets[i] = first + int64(i)
			if _, err := stmt.ExecContext(ctx, row.id, log.Source, offsets[i], nonNil(p), accepted); err != nil {
				return err
			}
		}
		return nil
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
	row, err := lookupScenario(ctx, s.read, log.Scenario)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx,
		`SELECT event_offset, payload, accepted_at FROM events
		 WHERE scenario_id = ? AND source = ? AND event_offset >= ?
		 ORDER BY event_offset LIMIT ?`, row.id, log.Source, from, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []store.Event
	for rows.Next() {
		var e store.Event
		var accepted int64
		if err := rows.Scan(&e.Offset, &e.Payload, &accepted); err != nil {
			return nil, err
		}
		e.AcceptedAt = fromMicros(accepted)
		list = append(list, e)
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
		res, err := tx.ExecContext(ctx,
			`DELETE FROM events WHERE scenario_id = ? AND source = ? AND event_offset < ?`, row.id, log.Source, below)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("truncating events of %q/%q below %d: %w", log.Scenario, log.Source, below, err)
	}
	return n, nil
}
