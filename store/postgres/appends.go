package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
	"github.com/scenario-server/scenario-server/store/internal/group"
)

// appendCall is one append of a group commit.
type appendCall = group.Call[check.Append, store.EventBatch]

// logAppends is what a group appends to one event log: its calls in arrival order, and what
// the first round trip of commitAppends read under the log's lock.
type logAppends struct {
	log   store.EventLog
	calls []*appendCall

	found      bool  // the scenario exists (the log's row is locked)
	scenarioID int64 // when found
	next       int64 // the log's next offset, when found
	// batches are the keyed batches of the log under the group's keys: those stored before
	// (read under the lock), then those the group appends.
	batches map[string]keyedBatch
}

// keyedBatch is a stored keyed batch, as the key check compares it.
type keyedBatch struct {
	firstOffset int64
	count       int
	acceptedAt  time.Time
	hash        []byte // nil for a batch stored before hashes were
}

// commitAppends runs a group of appends in one transaction and two round trips whatever
// the group's size: one pipeline that begins the transaction, locks each log's row (creating
// it when new) in (scenario, source) order, so that two servers' groups cannot deadlock,
// reads its next offset and looks up the group's keys among its batches; and one pipeline
// that writes the chunks, the keyed batches and the logs' new next offsets, and commits.
// Offsets are handed out under the locks, hence in commit order. An append refused on its own
// (an unknown scenario, a reused key) writes nothing and leaves the others be; a batch whose
// key an earlier batch of the group (or of the log) holds is a duplicate of it, as if they had
// come one after the other. A failure rolls the whole group back.
func (s *Store) commitAppends(calls []*appendCall) error {
	ctx := context.WithoutCancel(calls[0].Req.Ctx)
	logs := groupByLog(calls)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var lock pgx.Batch
	lock.Queue(`BEGIN`)
	queueLocks(&lock, logs)
	err = conn.SendBatch(ctx, &lock).Close()
	if err == nil {
		at := now() // the time of the group's commit
		var write pgx.Batch
		for _, l := range logs {
			queueAppends(&write, l, at)
		}
		write.Queue(`COMMIT`)
		err = conn.SendBatch(ctx, &write).Close()
	}
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		// The transaction failed before its COMMIT (the statements after the failure, COMMIT
		// included, were skipped): end it, or drop the connection.
		if _, rerr := conn.Exec(ctx, `ROLLBACK`); rerr != nil {
			conn.Conn().Close(ctx)
		}
	}
	if err == nil || isFull(err) {
		return s.classify(err)
	}
	return err
}

// groupByLog sorts a group's calls by event log, in (scenario, source) order, keeping their
// arrival order within a log.
func groupByLog(calls []*appendCall) []*logAppends {
	ordered := slices.Clone(calls)
	slices.SortStableFunc(ordered, func(a, b *appendCall) int {
		return cmp.Or(cmp.Compare(a.Req.Log.Scenario, b.Req.Log.Scenario), cmp.Compare(a.Req.Log.Source, b.Req.Log.Source))
	})
	var logs []*logAppends
	for _, c := range ordered {
		if n := len(logs); n == 0 || logs[n-1].log != c.Req.Log {
			logs = append(logs, &logAppends{log: c.Req.Log, batches: map[string]keyedBatch{}})
		}
		l := logs[len(logs)-1]
		l.calls = append(l.calls, c)
	}
	return logs
}

// queueLocks queues, for each log, the statements that lock its row, creating it when new,
// and read its next offset and the batches stored under the keys of its calls. A log whose
// scenario does not exist is left not found.
func queueLocks(b *pgx.Batch, logs []*logAppends) {
	for _, l := range logs {
		b.Queue(`INSERT INTO event_logs AS l (scenario_id, source, next_offset)
			 SELECT id, $2, 0 FROM scenarios WHERE name = $1
			 ON CONFLICT (scenario_id, source) DO UPDATE SET next_offset = l.next_offset
			 RETURNING scenario_id, next_offset`, l.log.Scenario, l.log.Source).
			QueryRow(func(row pgx.Row) error {
				err := row.Scan(&l.scenarioID, &l.next)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				l.found = err == nil
				return err
			})
		var keys []string
		for _, c := range l.calls {
			if c.Req.Key != "" {
				keys = append(keys, c.Req.Key)
			}
		}
		if len(keys) == 0 {
			continue
		}
		// After the lock (each statement of the pipeline sees what committed before it
		// started): two groups with the same key cannot both miss it.
		b.Queue(`SELECT b.batch_key, b.first_offset, b.event_count, b.accepted_at, b.batch_sha256
			 FROM event_batches b JOIN scenarios s ON s.id = b.scenario_id
			 WHERE s.name = $1 AND b.source = $2 AND b.batch_key = ANY($3)`, l.log.Scenario, l.log.Source, keys).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var key string
					var kb keyedBatch
					if err := rows.Scan(&key, &kb.firstOffset, &kb.count, &kb.acceptedAt, &kb.hash); err != nil {
						return err
					}
					kb.acceptedAt = kb.acceptedAt.UTC()
					l.batches[key] = kb
				}
				return rows.Err()
			})
	}
}

// queueAppends answers l's calls, accepted at at (the batches of a group share it), and
// queues the writes of those that append: their chunks, their keys, the log's next offset.
func queueAppends(b *pgx.Batch, l *logAppends, at time.Time) {
	next := l.next
	for _, c := range l.calls {
		r := c.Req
		res := store.EventBatch{Key: r.Key, Count: len(r.Payloads)}
		if !l.found {
			c.Res, c.Err = res, fmt.Errorf("scenario %q: %w", r.Log.Scenario, store.ErrNotFound)
			continue
		}
		var hash []byte
		if r.Key != "" {
			hash = check.BatchHash(r.Payloads)
			if kb, ok := l.batches[r.Key]; ok {
				if err := check.SameBatch(kb.count, kb.hash, len(r.Payloads), hash); err != nil {
					c.Res, c.Err = res, err
					continue
				}
				res.FirstOffset, res.AcceptedAt, res.Duplicate = kb.firstOffset, kb.acceptedAt, true
				c.Res = res
				continue
			}
		}
		res.FirstOffset, res.AcceptedAt = next, at
		next += int64(len(r.Payloads))
		b.Queue(`INSERT INTO event_chunks (scenario_id, source, last_offset, event_count, payloads, accepted_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
			l.scenarioID, r.Log.Source, next-1, len(r.Payloads), check.EncodeChunk(r.Payloads), at)
		if r.Key != "" {
			b.Queue(`INSERT INTO event_batches (scenario_id, source, batch_key, first_offset, event_count, accepted_at, batch_sha256)
				 VALUES ($1, $2, $3, $4, $5, $6, $7)`, l.scenarioID, r.Log.Source, r.Key, res.FirstOffset, len(r.Payloads), at, hash)
			l.batches[r.Key] = keyedBatch{firstOffset: res.FirstOffset, count: len(r.Payloads), acceptedAt: at, hash: hash}
		}
		c.Res = res
	}
	if next != l.next {
		b.Queue(`UPDATE event_logs SET next_offset = $3 WHERE scenario_id = $1 AND source = $2`,
			l.scenarioID, l.log.Source, next)
	}
}
