package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/schemaregistry"
	"github.com/scenario-server/scenario-server/value"
)

// kafkaTransactionTimeout is how long the brokers keep a transaction of a Kafka sink open
// before they abort it. It bounds how long read_committed consumers wait behind the
// transaction of a checkpoint that never commits (the server died before the store commit,
// and does not come back). A server that dies after the store committed a checkpoint and
// before Kafka committed its transaction must be back within it: later, the brokers have
// aborted the transaction and the checkpoint's records are lost (logged as an error).
const kafkaTransactionTimeout = time.Minute

// kafkaPrepareTimeout bounds phase 1 of a checkpoint (settling, producing, acknowledging):
// brokers that do not answer fail the checkpoint, which is tried again, rather than hold the
// deployment (and its stop) for ever.
const kafkaPrepareTimeout = 30 * time.Second

// kafkaSink is a deployment's Kafka sink: exactly-once, by a two-phase commit of each
// checkpoint between Kafka and the store, as Flink's two-phase commit sink does.
//
//   - Between two checkpoints the records are buffered (pending), bounded with the collect
//     results by maxPendingResults.
//   - Phase 1 (prepare, before the store commit): the records go into one Kafka transaction,
//     produced and acknowledged but not committed; read_committed consumers do not see them
//     yet. The transaction (transactional id, producer id and epoch) is recorded in the
//     checkpoint's state.
//   - The store commits the checkpoint. When it fails, the transaction is aborted and the
//     records stay pending: they are produced again in the next checkpoint's transaction.
//   - Phase 2 (commit, after the store commit): the Kafka transaction is committed. When that
//     fails, the transaction is committed from its record (EndTxn with the recorded producer
//     id and epoch) before the next transaction begins, and the next checkpoint waits for it.
//   - After a crash, or in a new deployment of the scenario, the transactions the restored
//     checkpoint records are committed that way first; then the sink's producers are
//     initialised, which fences the producers of the previous run (their commits are refused)
//     and aborts what they left open (a checkpoint the store never committed).
//
// Each sink has two transactional ids, CLIENT_ID.SCENARIO.SINK.0 and .1, used in turns: the
// checkpoint's transaction is then the only one its id can have open, so committing it
// from its record cannot commit a later checkpoint's transaction (on brokers that keep the
// producer epoch from one transaction to the next, before KIP-890, a later transaction of
// the same id would have the same producer id and epoch). The ids are stable per scenario and
// sink: a restart or a redeploy fences the producers of the one before.
//
// Only the deployment's goroutine uses it.
type kafkaSink struct {
	id, topic string
	// encoded: the engine hands the values encoded for the schema registry, as strings of
	// their bytes (engine.Options.EncodeKafkaValue).
	encoded bool
	txnIDs  [2]string
	conn    kafkaConn
	log     *slog.Logger

	pending []*kgo.Record
	// restored are the transactions of the checkpoint the deployment restored, committed
	// before the producers are initialised; ready is set once they are.
	restored []kafkaTxn
	ready    bool
	// producers are the transactional clients of txnIDs; nil until needed, or after a
	// failure (a new one fences whatever the failed one left).
	producers [2]*kgo.Client
	slot      int        // the producer of the next transaction
	prepared  *kafkaTxn  // the transaction of the checkpoint being committed
	unsettled []kafkaTxn // committed in the store, not known committed in Kafka
	control   *kgo.Client
}

// kafkaTxn is a Kafka transaction a checkpoint records.
type kafkaTxn struct {
	sink          string
	transactional string
	producerID    int64
	epoch         int16
	slot          int
}

func newKafkaSink(id, topic, scenario string, conn kafkaConn, clientID string, log *slog.Logger) *kafkaSink {
	k := &kafkaSink{id: id, topic: topic, conn: conn, log: log.With("sink", id, "topic", topic)}
	for i := range k.txnIDs {
		k.txnIDs[i] = fmt.Sprintf("%s.%s.%s.%d", clientID, scenario, id, i)
	}
	return k
}

// add buffers the record of one event: v is the engine's {key, value, headers} record.
func (k *kafkaSink) add(enc *value.JSONEncoder, v value.Value) {
	rec := &kgo.Record{Topic: k.topic}
	r := v.Record()
	if r == nil { // not from a Kafka sink node: the value alone
		rec.Value = enc.Append(nil, v)
		k.pending = append(k.pending, rec)
		return
	}
	if key, ok := r.Get(engine.KafkaKey); ok && !key.IsNull() {
		rec.Key = kafkaBytes(enc, key)
	}
	val, _ := r.Get(engine.KafkaValue)
	if k.encoded && val.Kind() == value.KindString {
		rec.Value = []byte(val.Str())
	} else {
		rec.Value = enc.Append(nil, val)
	}
	if h, ok := r.Get(engine.KafkaHeaders); ok {
		if hr := h.Record(); hr != nil {
			for i, name := range hr.Keys {
				if !hr.Values[i].IsNull() {
					rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: name, Value: kafkaBytes(enc, hr.Values[i])})
				}
			}
		}
	}
	k.pending = append(k.pending, rec)
}

// kafkaBytes is a key's or a header's bytes: a string's own, anything else's JSON.
func kafkaBytes(enc *value.JSONEncoder, v value.Value) []byte {
	if v.Kind() == value.KindString {
		return []byte(v.Str())
	}
	return enc.Append(nil, v)
}

// prepare is phase 1: it settles what earlier checkpoints left (the restored transactions,
// one whose commit failed), then produces the pending records in a new transaction and
// returns it (none without records). On an error the transaction is aborted and the records
// stay pending.
func (k *kafkaSink) prepare(ctx context.Context) (*kafkaTxn, error) {
	if len(k.pending) == 0 && len(k.restored) == 0 && len(k.unsettled) == 0 {
		// Nothing to write or to settle: the checkpoint does not need the brokers (a deploy
		// is not held up by them; the producers are initialised with the first records).
		return nil, nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, kafkaPrepareTimeout)
	defer cancel()
	if err := k.settle(ctx); err != nil {
		return nil, err
	}
	if len(k.pending) == 0 {
		return nil, nil
	}
	cl, err := k.producer(ctx, k.slot)
	if err != nil {
		return nil, err
	}
	if err := cl.BeginTransaction(); err != nil {
		k.reset(k.slot)
		return nil, k.failed("beginning a transaction", err)
	}
	// Fresh records each time: kgo keeps its state (context, partition, producer) in the
	// records it produced, and after an abort they are produced again.
	recs := make([]*kgo.Record, len(k.pending))
	for i, r := range k.pending {
		recs[i] = &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers}
	}
	err = cl.ProduceSync(ctx, recs...).FirstErr()
	var txn *kafkaTxn
	if err == nil {
		var pid int64
		var epoch int16
		pid, epoch, err = cl.ProducerID(ctx)
		txn = &kafkaTxn{sink: k.id, transactional: k.txnIDs[k.slot], producerID: pid, epoch: epoch, slot: k.slot}
	}
	if err != nil {
		k.abortOn(parent, k.slot)
		return nil, k.failed("producing the checkpoint's records", err)
	}
	k.prepared = txn
	return txn, nil
}

// committed is phase 2, once the store committed the checkpoint: the records are the
// transaction's now, which is committed in Kafka. A commit that fails is retried from the
// record before the next transaction begins.
func (k *kafkaSink) committed(ctx context.Context) {
	if k.prepared == nil {
		return
	}
	txn := *k.prepared
	clear(k.pending) // the records are the transaction's now
	k.prepared, k.pending = nil, k.pending[:0]
	k.slot = 1 - txn.slot
	if cl := k.producers[txn.slot]; cl != nil {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
			return
		} else {
			k.log.Warn("committing the checkpoint's Kafka transaction failed; committing it again before the next one",
				"transactional_id", txn.transactional, "error", k.conn.explain(err))
		}
	}
	k.reset(txn.slot)
	k.unsettled = append(k.unsettled, txn)
}

// aborted is the other end of phase 2: the store did not commit the checkpoint. The
// transaction is aborted; its records stay pending for the next checkpoint.
func (k *kafkaSink) aborted(ctx context.Context) {
	if k.prepared == nil {
		return
	}
	slot := k.prepared.slot
	k.prepared = nil
	k.abortOn(ctx, slot)
}

// abortOn aborts the open transaction of producer slot; a producer that cannot is dropped (the
// next one, initialised with the same transactional id, aborts it).
func (k *kafkaSink) abortOn(ctx context.Context, slot int) {
	cl := k.producers[slot]
	if cl == nil {
		return
	}
	if err := cl.AbortBufferedRecords(ctx); err == nil {
		if err = cl.EndTransaction(ctx, kgo.TryAbort); err == nil {
			return
		}
	}
	k.reset(slot)
}

// settle commits the transactions earlier checkpoints recorded and Kafka may not have
// committed (restored ones, and one whose commit failed), then, the first time, initialises
// both producers: that fences the previous run's producers and aborts what they left open.
// (A zombie that could commit before then has lost the deployment's lease: its store commit
// fails, so it aborts its transaction.)
func (k *kafkaSink) settle(ctx context.Context) error {
	for len(k.restored) > 0 || len(k.unsettled) > 0 {
		var txn kafkaTxn
		if len(k.restored) > 0 {
			txn = k.restored[0]
		} else {
			txn = k.unsettled[0]
		}
		if err := k.commitRecorded(ctx, txn); err != nil {
			return err
		}
		if len(k.restored) > 0 {
			k.restored = k.restored[1:]
		} else {
			k.unsettled = k.unsettled[1:]
		}
	}
	if k.ready {
		return nil
	}
	for slot := range k.producers {
		if _, err := k.producer(ctx, slot); err != nil {
			return err
		}
	}
	k.ready = true
	return nil
}

// commitRecorded commits a recorded transaction with EndTxn, as its producer would. Brokers
// that no longer hold it open answer: committed already (success, or for brokers with
// KIP-890 a retry of the commit), or aborted (the transaction timeout passed: its records
// are lost, logged as an error), or fenced (a newer producer took the id); only failures to
// reach the coordinator are returned, to try again.
func (k *kafkaSink) commitRecorded(ctx context.Context, txn kafkaTxn) error {
	if k.control == nil {
		cl, err := k.conn.client(kgo.RetryTimeout(kafkaRequestTimeout))
		if err != nil {
			return k.failed("connecting", err)
		}
		k.control = cl
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txn.transactional, txn.producerID, txn.epoch, true
	resp, err := req.RequestWith(ctx, k.control)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.InvalidTxnState):
		k.log.Error("the brokers aborted the Kafka transaction of a committed checkpoint (its transaction timeout passed?): its records are lost",
			"transactional_id", txn.transactional, "producer_id", txn.producerID, "epoch", txn.epoch, "error", err)
		return nil
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping):
		k.log.Warn("the Kafka transaction of a committed checkpoint is no longer open with its producer; if it was not committed, its records are lost",
			"transactional_id", txn.transactional, "producer_id", txn.producerID, "epoch", txn.epoch, "error", err)
		return nil
	}
	return k.failed(fmt.Sprintf("committing the transaction %q of a committed checkpoint", txn.transactional), err)
}

// producer returns the transactional client of slot, initialised (its producer id loaded,
// which fences the id's earlier producers).
func (k *kafkaSink) producer(ctx context.Context, slot int) (*kgo.Client, error) {
	if cl := k.producers[slot]; cl != nil {
		return cl, nil
	}
	// Requests are retried for kafkaRequestTimeout, not kgo's 30 s: a refused login shows
	// as such in the checkpoint error (not as the checkpoint's timeout), and soon.
	cl, err := k.conn.client(kgo.TransactionalID(k.txnIDs[slot]), kgo.TransactionTimeout(kafkaTransactionTimeout),
		kgo.DefaultProduceTopic(k.topic), kgo.RetryTimeout(kafkaRequestTimeout))
	if err != nil {
		return nil, k.failed("creating the producer", err)
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return nil, k.failed(fmt.Sprintf("initialising the transactional producer %q", k.txnIDs[slot]), err)
	}
	k.producers[slot] = cl
	return cl, nil
}

// reset drops the producer of slot after a failure.
func (k *kafkaSink) reset(slot int) {
	if cl := k.producers[slot]; cl != nil {
		cl.Close()
		k.producers[slot] = nil
	}
}

func (k *kafkaSink) failed(what string, err error) error {
	return fmt.Errorf("kafka sink %q (topic %q): %s: %w", k.id, k.topic, what, k.conn.explain(err))
}

func (k *kafkaSink) close() {
	for slot := range k.producers {
		k.reset(slot)
	}
	if k.control != nil {
		k.control.Close()
		k.control = nil
	}
}

// The sinks' side of the two-phase commit (see kafkaSink), in the order the checkpoint calls
// them: prepareKafka before the store commit, then kafkaCommitted or kafkaAborted.

// prepareKafka runs phase 1 on every Kafka sink and returns the transactions the checkpoint
// records. On an error the sinks' open transactions are aborted.
func (s *sinks) prepareKafka(ctx context.Context) ([]kafkaTxn, error) {
	var txns []kafkaTxn
	for _, id := range slices.Sorted(maps.Keys(s.kafka)) {
		txn, err := s.kafka[id].prepare(ctx)
		if err != nil {
			s.kafkaAborted(ctx)
			return nil, err
		}
		if txn != nil {
			txns = append(txns, *txn)
		}
	}
	return txns, nil
}

func (s *sinks) kafkaCommitted(ctx context.Context) {
	for _, k := range s.kafka {
		k.committed(ctx)
	}
}

func (s *sinks) kafkaAborted(ctx context.Context) {
	for _, k := range s.kafka {
		k.aborted(ctx)
	}
}

// restoreKafka hands each Kafka sink the transactions of the checkpoint restored, to commit
// before it writes.
func (s *sinks) restoreKafka(txns []kafkaTxn) {
	for _, txn := range txns {
		if k := s.kafka[txn.sink]; k != nil {
			k.restored = append(k.restored, txn)
			k.slot = 1 - txn.slot
			continue
		}
		// A sink the new version no longer has: its last transaction is committed all the
		// same, by another Kafka sink (with none, it is left to the brokers' timeout).
		for _, id := range slices.Sorted(maps.Keys(s.kafka)) {
			s.kafka[id].restored = append(s.kafka[id].restored, txn)
			break
		}
	}
}

func (s *sinks) closeKafka() {
	for _, k := range s.kafka {
		k.close()
	}
}

// kafkaPending counts the records the Kafka sinks hold for the next checkpoint.
func (s *sinks) kafkaPending() int {
	n := 0
	for _, k := range s.kafka {
		n += len(k.pending)
	}
	return n
}

// openKafkaSink is the Kafka sink's connector: it adds sink node id to s; the problem when the server has no
// brokers to write to.
func openKafkaSink(r *Runtime, s *sinks, id string, p *nodes.Plan, _ map[string]string, scenarioName string) *scenario.Problem {
	if len(r.cfg.KafkaBrokers) == 0 {
		return &scenario.Problem{NodeID: id, Field: "ref.typ", Code: "kafka-not-configured",
			Message: "the server has no Kafka brokers to write to: start it with --kafka-brokers host:port (env SCENARIO_SERVER_KAFKA_BROKERS)"}
	}
	plan := p.Typed.(*engine.SinkPlan)
	if plan.ValueSubject != "" && r.schemas == nil {
		return &scenario.Problem{NodeID: id, Field: "valueSubject", Code: "schema-registry-not-configured",
			Message: "the server has no schema registry to encode values with: start it with --kafka-schema-registry URL (env SCENARIO_SERVER_KAFKA_SCHEMA_REGISTRY)"}
	}
	k := newKafkaSink(id, plan.Topic, scenarioName, r.kafka, r.cfg.Kafka.clientID(), r.log.With("scenario", scenarioName))
	k.encoded = plan.ValueSubject != ""
	s.kafka[id], s.writers[id] = k, k
	return nil
}

// encodeKafkaValue encodes a Kafka sink's value against the latest schema of subject in the
// schema registry (engine.Options.EncodeKafkaValue).
func (r *Runtime) encodeKafkaValue(subject string, v value.Value) ([]byte, error) {
	// Not the runtime's context: a shutdown must not make the values of its last events
	// errors.
	ctx, cancel := context.WithTimeout(context.Background(), schemaregistry.Timeout)
	defer cancel()
	return r.schemas.Encode(ctx, subject, value.AppendJSON(nil, v))
}
