package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/engine"
	snapshot "github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// kafkaPrepareTimeout bounds phase 1 of a checkpoint (settling, producing, acknowledging):
// brokers that do not answer fail the checkpoint, which is tried again, rather than hold the
// deployment (and its stop) for ever.
const kafkaPrepareTimeout = 30 * time.Second

// Output is a deployment's Kafka sink: exactly-once, by a two-phase commit of each
// checkpoint between Kafka and the store, as Flink's two-phase commit sink does.
//
//   - Between two checkpoints the records are buffered (Write, Pending).
//   - Phase 1 (Prepare, before the store commit): the records go into one Kafka transaction,
//     produced and acknowledged but not committed; read_committed consumers do not see them
//     yet. The transaction (transactional id, producer id and epoch) is the state the
//     checkpoint records.
//   - The store commits the checkpoint. When it did not (Abort, once the store decided: an
//     error that may follow a commit leaves the transaction open until then), the
//     transaction is aborted and the records stay pending: they are produced again in the
//     next checkpoint's transaction.
//   - Phase 2 (Commit, after the store commit): the Kafka transaction is committed. When that
//     fails, the transaction is committed from its record (EndTxn with the recorded producer
//     id and epoch) before the next transaction begins, and the next checkpoint waits for it.
//   - After a crash, or in a new deployment of the scenario, the transactions the restored
//     checkpoint records (Restore: this sink's, and those of Kafka sinks the version no
//     longer has) are committed that way first; then the sink's producers are
//     initialised, which fences the producers of the previous run (their commits are refused)
//     and aborts what they left open (a checkpoint the store never committed).
//
// Each sink has two transactional ids, CLIENT_ID.SCENARIO.SINK.0 and .1 (TransactionalID),
// used in turns: the
// checkpoint's transaction is then the only one its id can have open, so committing it
// from its record cannot commit a later checkpoint's transaction (on brokers that keep the
// producer epoch from one transaction to the next, before KIP-890, a later transaction of
// the same id would have the same producer id and epoch). The ids are stable per scenario and
// sink: a restart or a redeploy fences the producers of the one before.
//
// Only the deployment's goroutine uses it.
type Output struct {
	id, topic string
	// encoded: the engine hands the values encoded for the schema registry, as strings of
	// their bytes (engine.Options.EncodeKafkaValue).
	encoded bool
	txnIDs  [2]string
	conn    *Conn
	log     *slog.Logger
	enc     value.JSONEncoder

	pending []*kgo.Record
	// requeued: pending[:requeued] are records of committed checkpoints whose transactions
	// the brokers aborted, in their order, produced again before the others (commitRecorded).
	requeued int
	// pendingBytes is PendingBytes: what pending's records hold (recordBytes).
	pendingBytes int
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
	// topicBytes is the topic's max.message.bytes (Ready), 0 before it is known; boundSet:
	// Ready has settled the bound (known, or the default when it cannot be read).
	topicBytes int
	boundSet   bool
	// When the brokers refuse a batch as too large and the topic's bound is not known (its
	// max.message.bytes could not be read, or is 0): oneByOne makes the producers send one
	// record a batch from then on, so that a refusal names its record; refused are the records
	// so refused, taken out of pending for the deployment's dead letters (TakeRefused), and
	// refusedBytes the least of their sizes (recordBytes), past which MaxRecordBytes refuses
	// records as they are written. Without it, one record over the topic's bound failed every
	// checkpoint for good (a hostile round: a producer-only ACL, which may not describe the
	// topic's configs).
	oneByOne     bool
	refused      []Refused
	refusedBytes int
	// settleOnly: the Output only commits the transactions it restored (connector.Sink.Settle);
	// it has no producers of its own.
	settleOnly bool
}

// kafkaTxn is a Kafka transaction a checkpoint records (TxnState).
type kafkaTxn struct {
	transactional string
	producerID    int64
	epoch         int16
	slot          int
	// records are the transaction's records while this Output still holds them (a commit
	// that failed, see committed); nil for a restored transaction.
	records []*kgo.Record
	// partition and offset are where the transaction's first record went (txnCommitted
	// reads its marker from there); unknown for a restored transaction.
	partition int32
	offset    int64
}

// NewOutput returns the Output of Kafka sink node id of scenario, writing to topic through
// conn. encoded: the engine hands the values encoded for the schema registry, as strings of
// their bytes (engine.Options.EncodeKafkaValue).
func NewOutput(id, topic, scenario string, encoded bool, conn *Conn, log *slog.Logger) *Output {
	clientID := conn.clientID
	k := &Output{id: id, topic: topic, encoded: encoded, conn: conn, log: log.With("sink", id, "topic", topic)}
	for i := range k.txnIDs {
		k.txnIDs[i] = TransactionalID(clientID, scenario, id, i)
	}
	return k
}

// TransactionalID is the transactional id of slot (0 or 1) of Kafka sink node sink of
// scenario, for a server of client id clientID: CLIENT_ID.SCENARIO.SINK.SLOT, each name with
// '%' written %25 and '.' written %2E, so that no two sinks share an id (scenario a.b's sink
// c and scenario a's sink b.c were both CLIENT_ID.a.b.c and fenced each other's producers).
// Names without either are as they were.
func TransactionalID(clientID, scenario, sink string, slot int) string {
	esc := strings.NewReplacer("%", "%25", ".", "%2E")
	return fmt.Sprintf("%s.%s.%s.%d", esc.Replace(clientID), esc.Replace(scenario), esc.Replace(sink), slot)
}

// add buffers the record of one event: v is the engine's {key, value, headers} record.
func (k *Output) add(enc *value.JSONEncoder, v value.Value) {
	rec := &kgo.Record{Topic: k.topic}
	r := v.Record()
	if r == nil { // not from a Kafka sink node: the value alone
		rec.Value = enc.Append(nil, v)
		k.pending = append(k.pending, rec)
		k.pendingBytes += recordBytes(rec)
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
	k.pendingBytes += recordBytes(rec)
}

// headerBytes is the bytes of r's headers' names and values.
func headerBytes(r *kgo.Record) int {
	n := 0
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// recordBytes is what a pending record holds: the bytes of its key, value and headers, and
// franz-go's record (kgoRecordBytes) and headers (kgoHeaderBytes) around them (counted by
// their bytes alone, a million records of 1 byte passed no bound).
func recordBytes(r *kgo.Record) int {
	n := kgoRecordBytes + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += kgoHeaderBytes + len(h.Key) + len(h.Value)
	}
	return n
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
func (k *Output) prepare(ctx context.Context) (*kafkaTxn, error) {
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
	if limit := k.MaxRecordBytes(); k.topicBytes > 0 {
		for _, r := range k.pending {
			if n := len(r.Key) + len(r.Value) + headerBytes(r); n > limit {
				// Made before the topic's bound was lowered: the brokers refuse it at every try.
				return nil, fmt.Errorf("kafka sink %q (topic %q): a record of %d bytes (key, value and headers) waits to be written, and the topic's max.message.bytes (%d, lowered since the record was made) takes at most %d: raise it back, or deploy the scenario again (the events since the last checkpoint are processed again, and a record over the bound is then a per-event error with a dead letter)",
					k.id, k.topic, n, k.topicBytes, limit)
			}
		}
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
	results, err := produceAll(ctx, cl, recs)
	if err != nil {
		// Its records sent and not answered (brokers that stopped answering), or not yet
		// sent: the producer is left to close on its own, and the next one, of the same
		// transactional id, fences it off and aborts its transaction.
		k.producers[k.slot] = nil
		go cl.Close()
		return nil, k.failed("producing the checkpoint's records", err)
	}
	err = results.FirstErr()
	var txn *kafkaTxn
	if err == nil {
		var pid int64
		var epoch int16
		pid, epoch, err = cl.ProducerID(ctx)
		txn = &kafkaTxn{transactional: k.txnIDs[k.slot], producerID: pid, epoch: epoch, slot: k.slot,
			partition: recs[0].Partition, offset: recs[0].Offset}
	}
	if err != nil {
		k.abortOn(parent, k.slot)
		switch {
		case errors.Is(err, kerr.MessageTooLarge) && k.topicBytes == 0 && k.oneByOne:
			// One record a batch: each refused one is too large alone.
			k.takeRefused(recs, results)
		case errors.Is(err, kerr.MessageTooLarge) && k.topicBytes == 0:
			k.oneByOne = true
			k.reset(0)
			k.reset(1)
			k.log.Warn("the brokers refused a batch as too large, and the topic's max.message.bytes is not known: records are sent one a batch from now on, and a record refused alone is a dead letter (let the sink's user describe the topic's configs to bound records as they are written)")
		case errors.Is(err, kerr.MessageTooLarge):
			// The topic's bound was lowered since Ready read it: it is read again before the
			// next try, and the producers made again with the batches it allows.
			k.boundSet, k.topicBytes = false, 0
			k.reset(0)
			k.reset(1)
		}
		if errors.Is(err, kerr.UnknownTopicID) {
			// The topic was deleted and created again: a producer keeps the old one's ID
			// until its metadata ages out (minutes). New producers, with the same
			// transactional ids, read the new one; both go, as the other has the old ID too
			// (it has no open transaction: settle committed the last one through control).
			k.reset(0)
			k.reset(1)
		}
		return nil, k.failed("producing the checkpoint's records", err)
	}
	k.prepared = txn
	return txn, nil
}

// produceAll produces recs and returns their results, in the order they were answered, once
// all are; or ctx's error once it ends, whatever is in flight. (kgo's ProduceSync waits for
// the records in flight whatever its context: a stop waited for brokers that did not answer,
// past the stop's wait, and the deployment was fenced off.)
func produceAll(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) (kgo.ProduceResults, error) {
	var mu sync.Mutex
	results := make(kgo.ProduceResults, 0, len(recs))
	for _, r := range recs {
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			results = append(results, kgo.ProduceResult{Record: r, Err: err})
			mu.Unlock()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return results, nil
}

// Refused is a record of a Kafka sink that the brokers refused as too large, alone in its
// batch (Output.TakeRefused): Bytes are its key's, value's and headers' (recordBytes, less
// what franz-go adds), Value its value.
type Refused struct {
	Bytes int
	Value []byte
	Err   error
}

// takeRefused moves the pending records that the brokers refused as too large (one record a
// batch: oneByOne) from pending to refused, and lowers refusedBytes to the least of their
// sizes. recs are the records produced, pending's copies in its order; results come in the
// order they completed.
func (k *Output) takeRefused(recs []*kgo.Record, results kgo.ProduceResults) {
	tooLarge := map[*kgo.Record]error{}
	for _, res := range results {
		if errors.Is(res.Err, kerr.MessageTooLarge) {
			tooLarge[res.Record] = res.Err
		}
	}
	kept := k.pending[:0]
	requeued := k.requeued
	for i, r := range k.pending {
		if err, ok := tooLarge[recs[i]]; ok {
			n := len(r.Key) + len(r.Value) + headerBytes(r)
			k.refused = append(k.refused, Refused{Bytes: n, Value: r.Value, Err: err})
			if k.refusedBytes == 0 || n < k.refusedBytes {
				k.refusedBytes = n
			}
			k.pendingBytes -= recordBytes(r)
			if i < k.requeued {
				requeued--
			}
			continue
		}
		kept = append(kept, r)
	}
	clear(k.pending[len(kept):])
	k.pending, k.requeued = kept, requeued
}

// TakeRefused returns the records the brokers refused as too large since it was last called
// (see Output.oneByOne), which the deployment keeps as dead letters, and forgets them.
func (k *Output) TakeRefused() []Refused {
	r := k.refused
	k.refused = nil
	return r
}

// committed is phase 2, once the store committed the checkpoint: the records are the
// transaction's now, which is committed in Kafka. A commit that fails is retried from the
// record before the next transaction begins.
func (k *Output) committed(ctx context.Context) {
	if k.prepared == nil {
		return
	}
	txn := *k.prepared
	recs := k.pending // the records are the transaction's now
	k.prepared, k.pending, k.requeued, k.pendingBytes = nil, nil, 0, 0
	k.slot = 1 - txn.slot
	if cl := k.producers[txn.slot]; cl != nil {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
			clear(recs)
			k.pending = recs[:0]
			return
		} else {
			k.log.Warn("committing the checkpoint's Kafka transaction failed; committing it again before the next one",
				"transactional_id", txn.transactional, "error", k.conn.explain(err))
		}
	}
	k.reset(txn.slot)
	// Kept until the transaction is known committed: aborted by the brokers meanwhile, they
	// are produced again (commitRecorded).
	txn.records = recs
	k.unsettled = append(k.unsettled, txn)
}

// aborted is the other end of phase 2: the store did not commit the checkpoint. The
// transaction is aborted; its records stay pending for the next checkpoint.
func (k *Output) aborted(ctx context.Context) {
	if k.prepared == nil {
		return
	}
	slot := k.prepared.slot
	k.prepared = nil
	k.abortOn(ctx, slot)
}

// abortOn aborts the open transaction of producer slot; a producer that cannot is dropped (the
// next one, initialised with the same transactional id, aborts it).
func (k *Output) abortOn(ctx context.Context, slot int) {
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
func (k *Output) settle(ctx context.Context) error {
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
	if k.ready || k.settleOnly {
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
// KIP-890 a retry of the commit), or aborted (the transaction timeout passed), or fenced (a
// newer epoch took the id: on brokers before KIP-890 the brokers' abort on the timeout, or
// another producer of the id, after the transaction committed or not). Fenced, the
// transaction's marker in its partition tells (txnCommitted). Aborted, the records this
// Output still holds (a commit of its own that failed) are produced again, first, in the
// next transaction: only the store's commit of that one's checkpoint makes them visible,
// which a server that lost the deployment's lease cannot have. A restored transaction's
// records are not held: aborted, they are lost (logged as an error). Failures to reach the
// coordinator, or to read the marker, are returned, to try again.
func (k *Output) commitRecorded(ctx context.Context, txn kafkaTxn) error {
	if _, err := k.controlClient(); err != nil {
		return err
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txn.transactional, txn.producerID, txn.epoch, true
	resp, err := req.RequestWith(ctx, k.control)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	notOpen := errors.Is(err, kerr.InvalidTxnState) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.InvalidProducerIDMapping)
	switch {
	case err == nil:
		return nil
	case notOpen && len(txn.records) > 0:
		if !errors.Is(err, kerr.InvalidTxnState) {
			// Fenced: a newer epoch took the id, either the brokers' abort on the timeout
			// (before KIP-890) or another producer of the id after the transaction ended
			// either way (a zombie of the deployment). The transaction's marker says which.
			committed, perr := k.txnCommitted(ctx, txn)
			switch {
			case errors.Is(perr, errTxnGone):
				// Cannot be told: produced again, at least once rather than lost.
				k.log.Warn("how the Kafka transaction of a committed checkpoint ended cannot be told (its records are no longer in their partition): they are produced again",
					"transactional_id", txn.transactional, "error", perr)
			case perr != nil:
				return k.failed(fmt.Sprintf("reading how the transaction %q of a committed checkpoint ended (its commit was answered %v)", txn.transactional, err), perr)
			case committed:
				return nil
			}
		}
		k.log.Warn("the brokers aborted the Kafka transaction of a committed checkpoint (its transaction timeout passed?): its records are produced again",
			"transactional_id", txn.transactional, "producer_id", txn.producerID, "epoch", txn.epoch, "records", len(txn.records), "error", err)
		k.pending = slices.Insert(k.pending, k.requeued, txn.records...)
		k.requeued += len(txn.records)
		for _, r := range txn.records {
			k.pendingBytes += recordBytes(r)
		}
		return nil
	case errors.Is(err, kerr.InvalidTxnState):
		k.log.Error("the brokers aborted the Kafka transaction of a committed checkpoint (its transaction timeout passed?): its records are lost",
			"transactional_id", txn.transactional, "producer_id", txn.producerID, "epoch", txn.epoch, "error", err)
		return nil
	case notOpen:
		k.log.Warn("the Kafka transaction of a committed checkpoint is no longer open with its producer; if it was not committed, its records are lost",
			"transactional_id", txn.transactional, "producer_id", txn.producerID, "epoch", txn.epoch, "error", err)
		return nil
	}
	return k.failed(fmt.Sprintf("committing the transaction %q of a committed checkpoint", txn.transactional), err)
}

// txnCommitted says how txn ended, from the marker (a control record) its producer's id wrote
// after its first record: it reads that record's partition from there, control records kept,
// to the partition's end as it is now. True for a commit, false for an abort. Errors: no
// marker by then (the transaction still open), the brokers not answering, ctx ending.
func (k *Output) txnCommitted(ctx context.Context, txn kafkaTxn) (bool, error) {
	cl, err := k.conn.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: {txn.partition: kgo.NewOffset().At(txn.offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		return false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, k.topic)
	if err != nil {
		return false, err
	}
	ends, err := adm.ListEndOffsets(ctx, k.topic)
	if err != nil {
		return false, err
	}
	start, okStart := starts.Lookup(k.topic, txn.partition)
	end, okEnd := ends.Lookup(k.topic, txn.partition)
	if !okStart || !okEnd || start.Err != nil || end.Err != nil {
		return false, fmt.Errorf("the offsets of partition %d: %v %v", txn.partition, start.Err, end.Err)
	}
	if start.Offset > txn.offset || end.Offset <= txn.offset {
		// Deleted (retention, DeleteRecords) or another topic of the name: no marker to read.
		return false, fmt.Errorf("%w: partition %d holds offsets %d to %d, the transaction's first record was %d", errTxnGone, txn.partition, start.Offset, end.Offset, txn.offset)
	}
	for next := txn.offset; next < end.Offset; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := fetches.Err(); err != nil {
			return false, err
		}
		var decided, committed, gone bool
		fetches.EachRecord(func(r *kgo.Record) {
			switch {
			case decided || gone || r.Offset < txn.offset:
			case next == txn.offset && (r.Offset != txn.offset || r.ProducerID != txn.producerID):
				gone = true // the first record is not the transaction's: it went meanwhile
			case r.Attrs.IsControl() && r.ProducerID == txn.producerID && r.ProducerEpoch >= txn.epoch && len(r.Key) >= 4:
				// A control record's key: version (int16), then type (int16): 0 abort, 1 commit.
				decided, committed = true, binary.BigEndian.Uint16(r.Key[2:4]) == 1
			}
			next = max(next, r.Offset+1)
		})
		switch {
		case gone:
			return false, fmt.Errorf("%w: the record at offset %d of partition %d is not the transaction's", errTxnGone, txn.offset, txn.partition)
		case decided:
			return committed, nil
		}
	}
	return false, fmt.Errorf("no marker of producer %d after offset %d of partition %d yet: the transaction is still open", txn.producerID, txn.offset, txn.partition)
}

// errTxnGone is txnCommitted's answer when the transaction's records are no longer in their
// partition (deleted, or the topic created again): how it ended cannot be read.
var errTxnGone = errors.New("the transaction's records are no longer in their partition")

// maxBatchWriteBytes is the most bytes a record batch a sink produces may hold before
// compression (kgo.ProducerBatchMaxBytes: its default, a little under the brokers' default
// message.max.bytes of 1,048,588). A record past it fails its transaction, and so its
// checkpoint; the engine refuses it first (MaxRecordBytes).
const maxBatchWriteBytes = 1_000_012

// MaxRecordBytes is the most bytes of key, value and headers (engine.KafkaRecordBytes) a
// Kafka sink's record may hold (engine.Options.MaxKafkaRecordBytes): a record batch of one
// record is its bytes, the batch's header (65 bytes) and the record's lengths (at most 36
// bytes, and 10 a header, which KafkaRecordBytes counts).
const MaxRecordBytes = maxBatchWriteBytes - 65 - 36

// Ready reads the topic's max.message.bytes (DescribeConfigs), which bounds the record
// batches the brokers take, once: the sink's records and batches are then bounded by it
// (MaxRecordBytes; the producer's batches). Before, a topic whose bound was under the
// producer's 1,000,012 bytes refused batches of small records and single large ones with
// MESSAGE_TOO_LARGE, which failed every checkpoint for good. It returns an error while the
// brokers cannot be asked (the deployment waits: nothing could be committed meanwhile); a
// bound the brokers do not give (not allowed to describe the topic, a topic that does not
// exist yet, a value not a number) is logged and the defaults stay.
func (k *Output) Ready(ctx context.Context) error {
	if k.boundSet {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, kafkaRequestTimeout)
	defer cancel()
	cl, err := k.controlClient()
	if err != nil {
		return err
	}
	configs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, k.topic)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = configs.On(k.topic, nil)
	}
	if err == nil {
		err = rc.Err
	}
	if err != nil && !isRefusal(err) {
		return k.failed("reading the topic's max.message.bytes", err)
	}
	k.boundSet = true
	if err != nil {
		k.log.Warn("the topic's max.message.bytes cannot be read: records and batches are bounded by the producer's default", "error", err, "max_batch_bytes", maxBatchWriteBytes)
		return nil
	}
	for _, c := range rc.Configs {
		if c.Key != "max.message.bytes" {
			continue
		}
		n, perr := strconv.Atoi(c.MaybeValue())
		if perr != nil || n <= 0 {
			k.log.Warn("the topic's max.message.bytes is not a positive number: records and batches are bounded by the producer's default", "value", c.MaybeValue())
			return nil
		}
		k.topicBytes = n
		if n < maxBatchWriteBytes {
			k.log.Info("records and batches bounded by the topic's max.message.bytes", "max_message_bytes", n, "max_record_bytes", k.MaxRecordBytes())
		}
	}
	return nil
}

// isRefusal says whether err is the brokers' answer that they will not describe the topic
// (authorization, no such topic, a request they do not support): asking again will not help.
func isRefusal(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && (!ke.Retriable || ke == kerr.UnknownTopicOrPartition)
}

// MaxRecordBytes is the most bytes of key, value and headers (engine.KafkaRecordBytes) a
// record of this sink may hold: MaxRecordBytes, or less for a topic whose max.message.bytes
// is less than the producer's batch bound (that bound less 101 bytes of the batch's header
// and the record's lengths; 0 when the topic's bound is under 101 bytes), and less than the
// least record the brokers refused alone as too large (refusedBytes), when the bound is not
// known.
func (k *Output) MaxRecordBytes() int {
	n := MaxRecordBytes
	if k.topicBytes > 0 {
		n = max(min(MaxRecordBytes, k.topicBytes-(maxBatchWriteBytes-MaxRecordBytes)), 0)
	}
	if k.refusedBytes > 0 {
		n = min(n, k.refusedBytes-1)
	}
	return n
}

// minBatchBytes is the least bound on batches franz-go takes (kgo.ProducerBatchMaxBytes).
const minBatchBytes = 512

// batchBytes bounds the record batches the producer makes: maxBatchWriteBytes, or the
// topic's max.message.bytes when less, and at least minBatchBytes (below it the producer
// sends one record at a time instead: see producer).
func (k *Output) batchBytes() int {
	if k.topicBytes > 0 && k.topicBytes < maxBatchWriteBytes {
		return max(k.topicBytes, minBatchBytes)
	}
	return maxBatchWriteBytes
}

// controlClient is the sink's client outside transactions (created once).
func (k *Output) controlClient() (*kgo.Client, error) {
	if k.control == nil {
		cl, err := k.conn.Client(kgo.RetryTimeout(kafkaRequestTimeout))
		if err != nil {
			return nil, k.failed("connecting", err)
		}
		k.control = cl
	}
	return k.control, nil
}

// producer returns the transactional client of slot, initialised (its producer id loaded,
// which fences the id's earlier producers).
func (k *Output) producer(ctx context.Context, slot int) (*kgo.Client, error) {
	if cl := k.producers[slot]; cl != nil {
		return cl, nil
	}
	// Requests are retried for kafkaRequestTimeout, not kgo's 30 s: a refused login shows
	// as such in the checkpoint error (not as the checkpoint's timeout), and soon.
	opts := []kgo.Opt{kgo.TransactionalID(k.txnIDs[slot]), kgo.TransactionTimeout(k.conn.txnTimeout),
		kgo.DefaultProduceTopic(k.topic), kgo.RetryTimeout(kafkaRequestTimeout), kgo.ProducerBatchMaxBytes(int32(k.batchBytes()))}
	if k.topicBytes > 0 && k.topicBytes < minBatchBytes || k.oneByOne {
		// Batches cannot be bounded below 512 bytes: one record at a time makes each batch
		// one record, which MaxRecordBytes fits to the topic. (oneByOne: the topic's bound is
		// not known, and a batch was refused.)
		opts = append(opts, kgo.MaxBufferedRecords(1))
	}
	cl, err := k.conn.Client(opts...)
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
func (k *Output) reset(slot int) {
	if cl := k.producers[slot]; cl != nil {
		cl.Close()
		k.producers[slot] = nil
	}
}

func (k *Output) failed(what string, err error) error {
	return fmt.Errorf("kafka sink %q (topic %q): %s: %w", k.id, k.topic, what, k.conn.explain(err))
}

func (k *Output) close() {
	for slot := range k.producers {
		k.reset(slot)
	}
	if k.control != nil {
		k.control.Close()
		k.control = nil
	}
}

var _ connector.Output = (*Output)(nil)

// TxnState is the state a checkpoint records for a Kafka transaction: the transactional id,
// the producer id and epoch, and the producer slot (0 or 1), in the snapshots' codec.
func TxnState(transactional string, producerID int64, epoch int16, slot int) []byte {
	b := snapshot.AppendBytes(nil, []byte(transactional))
	b = binary.AppendVarint(b, producerID)
	b = binary.AppendVarint(b, int64(epoch))
	return binary.AppendUvarint(b, uint64(slot))
}

func decodeTxn(b []byte) (kafkaTxn, error) {
	r := snapshot.NewReader(b)
	txn := kafkaTxn{transactional: string(r.Bytes()), producerID: r.Varint()}
	epoch := r.Varint()
	if r.Err() == nil && (epoch < math.MinInt16 || epoch > math.MaxInt16) {
		r.Fail("producer epoch %d", epoch)
	}
	txn.epoch = int16(epoch)
	if r.Bool() {
		txn.slot = 1
	}
	if r.Err() == nil && len(r.Rest()) != 0 {
		r.Fail("%d bytes after the transaction", len(r.Rest()))
	}
	if r.Err() != nil {
		return kafkaTxn{}, fmt.Errorf("the checkpoint's Kafka transaction does not decode: %w", r.Err())
	}
	return txn, nil
}

// Restore takes the transactions of the checkpoint restored (this sink's state, and others:
// those of Kafka sinks the version no longer has), to commit before the sink writes; the
// next transaction uses the other producer than the checkpoint's.
func (k *Output) Restore(_ context.Context, state []byte, others [][]byte) error {
	for i, b := range append([][]byte{state}, others...) {
		if b == nil {
			continue
		}
		txn, err := decodeTxn(b)
		if err != nil {
			return fmt.Errorf("kafka sink %q: %w", k.id, err)
		}
		k.restored = append(k.restored, txn)
		if i == 0 {
			k.slot = 1 - txn.slot
		}
	}
	return nil
}

// Unsettled describes the transactions of committed checkpoints not known committed in
// Kafka (restored, or whose commit failed): connector.Unsettled.
func (k *Output) Unsettled() string {
	n := len(k.restored) + len(k.unsettled)
	if n == 0 && k.requeued == 0 {
		return ""
	}
	var records int
	for _, txn := range k.unsettled {
		records += len(txn.records)
	}
	var what string
	if n > 0 {
		what = fmt.Sprintf("%d Kafka transaction(s) of committed checkpoints not known committed", n)
		if records > 0 {
			what += fmt.Sprintf(" (%d records)", records)
		}
	}
	if k.requeued > 0 {
		// Records of committed checkpoints whose transactions the brokers aborted, produced
		// again in a transaction not committed yet: only this Output holds them.
		if what != "" {
			what += "; "
		}
		what += fmt.Sprintf("%d records of committed checkpoints to produce again", k.requeued)
	}
	if k.id != "" {
		what = fmt.Sprintf("kafka sink %q (topic %q): %s", k.id, k.topic, what)
	}
	return what
}

// Write buffers the record of one event: v is the engine's {key, value, headers} record.
func (k *Output) Write(v value.Value) { k.add(&k.enc, v) }

// Pending is the number of records buffered for the next checkpoint.
func (k *Output) Pending() int { return len(k.pending) }

// PendingBytes is the bytes of the pending records' keys, values and headers.
func (k *Output) PendingBytes() int { return k.pendingBytes }

// Prepare is phase 1 (prepare); its state is the transaction (TxnState), nil without one.
func (k *Output) Prepare(ctx context.Context) ([]byte, error) {
	txn, err := k.prepare(ctx)
	if err != nil || txn == nil {
		return nil, err
	}
	return TxnState(txn.transactional, txn.producerID, txn.epoch, txn.slot), nil
}

// Commit is phase 2 (committed).
func (k *Output) Commit(ctx context.Context) { k.committed(ctx) }

// Abort aborts the checkpoint's transaction (aborted).
func (k *Output) Abort(ctx context.Context) { k.aborted(ctx) }

// Close closes the producers.
func (k *Output) Close() { k.close() }
