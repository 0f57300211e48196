package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/schemaregistry"
)

// Tuning of Kafka inputs.
const (
	// kafkaDiscoverInterval is how often a Kafka input looks at its topic's metadata: for
	// partitions added to it, and for a topic deleted and created again.
	kafkaDiscoverInterval = 10 * time.Second
	// kafkaConfirmInterval is how often a Kafka input lists its partitions' end offsets, to
	// know whether it has read everything (and so may be idle), and how long one poll waits.
	kafkaConfirmInterval = time.Second
	// kafkaRequestTimeout bounds one metadata or offsets request.
	kafkaRequestTimeout = 5 * time.Second
	// kafkaRetryDelay is the wait before trying again to reach the brokers or the topic.
	kafkaRetryDelay = time.Second
	// kafkaMetadataAge is the oldest cached metadata an offset listing may use: a partition
	// added to the topic may be missing from a listing made that long after it was added, so
	// a listing counts as made that much earlier.
	kafkaMetadataAge = time.Second
	// readBatch is the most records one poll hands the deployment.
	readBatch = 2000
)

// decodeTime is the longest one poll decodes record values (Input.Poll): the schema
// registry's timeout for one request. A batch of 2,000 records naming new schema ids of a
// registry that does not answer took 5 s each, and the deployment waited 92 s to stop.
var decodeTime = schemaregistry.Timeout

// Bounds of what a Kafka input reads: a broker returns records as its producers wrote them,
// and compressed batches let a few kilobytes stand for gigabytes (franz-go decompresses a
// batch of up to 1 GiB by default, and every batch of a fetch).
var (
	// maxValueBytes is the longest record value read as an event (a file source's longest
	// line, engine.MaxLineBytes): a longer one is a per-event error at the source, its
	// first bytes in the dead letter.
	maxValueBytes = engine.MaxLineBytes
	// maxBatchBytes bounds what one record batch may hold once decompressed, its records
	// counted kgoRecordBytes each besides their bytes (batchBytes): a larger one is skipped, a
	// per-event error at the source for the batch's offsets (kgo.MaxDecompressBatchBytes
	// bounds the decompression itself).
	maxBatchBytes = 32 << 20
	// fetchBudgetBytes bounds what the batches fetched between two polls may hold in all, as
	// batchBytes counts them (fetchBudget): past it, a partition's batches wait for the next
	// fetch.
	fetchBudgetBytes = 16 << 20
	// maxFetchBytes is the most bytes one fetch asks the brokers for (kgo.FetchMaxBytes,
	// 50 MiB by default): uncompressed batches are not decompressed, so this bounds them, a
	// broker giving at least one batch whatever its size. A response takes up to 25 times
	// its size of the FetchMemory until the client has handed its records over (chargeOf).
	maxFetchBytes = 1 << 20
)

// maxResponseBytes is the largest response of the brokers a source's client reads
// (kgo.BrokerMaxReadBytes, 100 MiB by default): a fetch's first batch of one record of
// maxValueBytes, and maxFetchBytes after it. A partition whose next batch is larger is not read
// past it: the source's error says so (franz-go's "response exceeds BrokerMaxReadBytes"). A
// response may hold 25 times its bytes once read (chargeOf): this bounds what one response
// takes past the FetchMemory when it is larger than it.
func maxResponseBytes() int32 { return int32(maxValueBytes + maxFetchBytes + 64<<10) }

// tooLargeShown is how long after a response past maxResponseBytes the source's status says
// so (franz-go tries again after a backoff of up to a few seconds).
const tooLargeShown = time.Minute

// pollWait is the longest one poll of the reader waits for records. The client fetches only
// while the reader polls, and a response is given back at the end of the poll during which
// its records were all handed over: short polls hand the budget on soon.
const pollWait = 100 * time.Millisecond

// kgoRecordBytes is what franz-go holds for each record of a batch besides its bytes: a
// kgo.Record (160 bytes) and its pointer. A batch of 2.8 million records of 11 bytes
// decompresses to 31 MB and held 450 MB of records.
const kgoRecordBytes = 168

// kgoHeaderBytes is what franz-go holds for each header of a record besides its bytes: a
// kgo.RecordHeader (a string and a slice, 40 bytes), made for as many headers as the record
// says it has (up to its bytes left), and its key copied into a string. A header is 2 bytes
// on the wire: one record of 16 million empty headers, 3 KB once compressed, held 640 MB.
const kgoHeaderBytes = 40

// batchBytes is what a decompressed batch, the records of Kafka's record batch format v2
// (each a zig-zag varint length and that many bytes), holds once read: its bytes,
// kgoRecordBytes a record, and kgoHeaderBytes and its key's bytes a header. It reads the
// records as franz-go does (kbin, readRawRecordsDirect), until the bytes do not hold one more.
func batchBytes(records []byte) int {
	n := len(records)
	for b := records; len(b) > 0; {
		l, k := kbin.Varint(b)
		if k <= 0 || l < 0 || int64(l) > int64(len(b)-k) {
			break
		}
		n += kgoRecordBytes + headersBytes(b[k:k+int(l)])
		b = b[k+int(l):]
	}
	return n
}

// headersBytes is what franz-go makes for the headers of record r (its bytes after its
// length): kgoHeaderBytes for each header it says it has, and each key's bytes.
func headersBytes(r []byte) int {
	b := kbin.Reader{Src: r}
	b.Int8()        // attributes
	b.Varlong()     // timestamp delta
	b.Varint()      // offset delta
	b.VarintBytes() // key
	b.VarintBytes() // value
	nh := int(b.VarintArrayLen())
	if nh <= 0 {
		return 0
	}
	n := nh * kgoHeaderBytes
	for i := 0; i < nh && b.Ok(); i++ {
		n += len(b.VarintBytes()) // the key, copied
		b.VarintBytes()           // the value, not copied
	}
	return n
}

// Input reads one topic, every partition, with franz-go as a direct consumer (no
// consumer group): the partitions' offsets live in the deployment's checkpoints, not in
// Kafka, as Flink's KafkaSource keeps them in its state. A partition without a checkpointed
// offset is read from its start (the log start offset). Records are read with isolation level
// read_committed, so aborted transactions are skipped; transaction markers move the positions
// on without being events. A position below the partition's log start offset (retention
// deleted the records) moves up to it, with a warning. Partitions added to the topic later are found within
// kafkaDiscoverInterval and read from their start; so is every partition of a topic that was
// deleted and created again (a new topic ID) while the deployment ran.
//
// A record's value is the event (a JSON object); its timestamp is the event time when the
// source has no timestamp expression. Per-event errors give the record's offset + 1 as their
// line, and its partition.
//
// Idleness: the input knows it has read everything only from an end-offset listing
// (every kafkaConfirmInterval). IdleClock says when the last listing that the processed
// positions have reached was made; the deployment lets the wall clock move idle watermarks no
// further than that, so records the brokers hold but could not deliver (an outage, a slow
// restart) are not made late by idleness. Nor are those their producers kept while the
// brokers were away: the time the input could not see the brokers (a listing or a fetch
// failed, or no listing came for blindGap) is not silence. ResumedAt says when it saw them
// again; the deployment has the engine count each partition's silence from then
// (engine.Engine.SourceResumed), before it pushes the records fetched after it.
type Input struct {
	source, topic string
	conn          *Conn
	log           *slog.Logger
	// schemas, when set, decodes values in the schema registry's wire format (decode).
	schemas *schemaregistry.Registry

	// Owned by the deployment's goroutine.
	next     map[int32]int64     // per partition, the offset after the last record pushed
	gen      int64               // the topic generation next belongs to
	pushedAt map[int32]time.Time // per partition, when its last record was polled
	polledAt time.Time           // when the batch being pushed was polled
	// ledger is what the reader's client holds of the FetchMemory (a new one each Start);
	// handedPoll is the reader's poll whose batch Poll handed over last (0: none): pushed
	// when Poll is called again without a rest.
	ledger     *fetchLedger
	handedPoll int64
	// taken is, per partition, the offset after the last record a poll took from the
	// reader (handed over, or kept in rest): records up to it wait to be pushed until next
	// reaches it.
	taken map[int32]int64

	batches chan kafkaBatch
	// rest is what a poll fetched but did not hand over: its decoding ran out of the
	// poll's time (decodeTime); the next poll hands it over first.
	rest *kafkaBatch
	// ctx is the input's, from Start: it ends with Stop or with Start's context, and
	// ends the decoding of a poll with it.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	health connector.Health
	// decoding is why the records wait rather than being decoded (the schema registry
	// cannot be reached), "" when they are decoded; wake is the deployment's (Start), and
	// retry the timer that wakes it to poll again while they wait.
	decoding connector.Health
	wake     func()
	retry    *time.Timer

	readerGen atomic.Int64 // the reader's topic generation: +1 when the topic was recreated

	// restoredID is the topic ID of the checkpointed positions (nil: not known). Set before
	// start.
	restoredID *kadm.TopicID

	mu          sync.Mutex
	topicID     kadm.TopicID           // the ID of the topic read in readerGen
	genIDs      map[int64]kadm.TopicID // by earlier generation, its topic's ID (the positions' until Poll syncs)
	base        map[int32]int64        // per partition: the offset reading started from (readerGen)
	starts      map[int32]int64        // per partition: the log start offset, as last listed
	ends        map[int32]int64        // per partition: the high watermark, as listed at confirmedAt
	endsGen     int64
	confirmedAt time.Time
	// listedOK is when the last listing that succeeded was asked (of any generation);
	// blind says a listing or a fetch failed since. resumedAt is when the input saw the
	// brokers again after it could not (noteListing, noteFetched).
	listedOK  time.Time
	blind     bool
	resumedAt time.Time
	// sentAt is when the latest end-offset listing was sent, answeredAt when the latest one
	// that answered (and counts: confirmedAt) was (Listing).
	sentAt, answeredAt time.Time
	// tooLargeAt is when the brokers last sent a response past maxResponseBytes (zero: never).
	tooLargeAt time.Time
}

// blindGap is the longest time between two listings that counts as the brokers seen: the
// reader lists every kafkaConfirmInterval, a fetch waits as long, and a request may take
// kafkaRequestTimeout.
const blindGap = 2*kafkaConfirmInterval + kafkaRequestTimeout

// blindLocked reports, under k.mu, whether the brokers have not been seen at now: a listing
// or a fetch failed since the last listing that succeeded, or none succeeded for blindGap.
func (k *Input) blindLocked(now time.Time) bool {
	return k.blind || !k.listedOK.IsZero() && now.Sub(k.listedOK) > blindGap
}

// noteListing records a listing asked at asked that succeeded (ok) or failed, under k.mu: a
// success while blind is when the input saw the brokers again.
func (k *Input) noteListing(asked time.Time, ok bool) {
	if !ok {
		k.blind = true
		return
	}
	// Seen again now, when the answer came (asked is a second earlier: kafkaMetadataAge).
	if now := time.Now(); k.blindLocked(asked) && now.After(k.resumedAt) {
		k.resumedAt = now
	}
	if asked.After(k.listedOK) {
		k.listedOK = asked
	}
	k.blind = false
}

// noteFetched records, under k.mu, that records were fetched at now: fetched while blind (a
// fetch can come back before the next listing does), now is when the brokers were seen again.
func (k *Input) noteFetched(now time.Time) {
	if k.blindLocked(now) && now.After(k.resumedAt) {
		k.resumedAt = now
	}
}

// ResumedAt is when the input last saw the brokers again after it could not (zero: never):
// the silence of its partitions counts from then, not from their last records.
func (k *Input) ResumedAt() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.resumedAt
}

// kafkaBatch is what one poll returned, for the topic generation gen: records, and batches
// skipped as too large to decompress.
type kafkaBatch struct {
	gen     int64
	poll    int64 // the reader's poll (fetchLedger.pollStarted)
	recs    []*kgo.Record
	skipped []*kgo.ErrDecompressTooLarge
}

// errFetchBudget is fetchBudget's refusal: the partition is fetched again after a poll.
var errFetchBudget = errors.New("the batches fetched since the last poll decompress to more than the input's bound; fetched again after the next poll")

// fetchBudget decompresses record batches (kgo.WithDecompressor) with franz-go's own
// decompressor bounded at maxBatchBytes per batch, refuses as too large a batch that holds
// more than maxBatchBytes as batchBytes counts it, and refuses a batch once those
// decompressed since the last poll (release) hold fetchBudgetBytes: the bound on one batch
// does not bound a fetch, whose every batch is decompressed (1 MiB of 600-byte zstd batches
// stood for 1,700 batches of 32 MiB).
//
// A batch also takes maxBatchBytes of the FetchMemory beyond its response's part before it is
// decompressed (fetchLedger.reserveDecompress), and keeps what it decompressed to, records
// counted, in the response's part (fetchLedger.decompressed).
type fetchBudget struct {
	inner  kgo.Decompressor
	ledger *fetchLedger
	used   atomic.Int64
}

// boundedDecompressor is franz-go's decompressor bounded at maxBatchBytes per batch, taken
// from a client configured so (kgo's own bound is not applied to a decompressor given with
// WithDecompressor).
func boundedDecompressor() (kgo.Decompressor, error) {
	cl, err := kgo.NewClient(kgo.MaxDecompressBatchBytes(maxBatchBytes))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	d, ok := cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
	if !ok {
		return nil, errors.New("kafka client: no decompressor")
	}
	return d, nil
}

func (b *fetchBudget) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	if codec == kgo.CodecNone {
		return src, nil // bounded by the fetch's bytes
	}
	if b.used.Load() >= int64(fetchBudgetBytes) {
		return nil, errFetchBudget
	}
	var took int64
	if b.ledger != nil {
		var ok bool
		if took, ok = b.ledger.reserveDecompress(); !ok {
			return nil, errFetchBudget
		}
	}
	out, err := b.inner.Decompress(src, codec)
	n := batchBytes(out)
	if err == nil && n > maxBatchBytes {
		// franz-go's error for a batch too large (kgo.ErrDecompressTooLarge) follows.
		out, err = nil, fmt.Errorf("%w: %d records' bytes", kgo.ErrMaxDecompress, n)
	}
	if b.ledger != nil {
		var kept, raw int64
		if err == nil {
			kept, raw = int64(n), int64(len(out))
		}
		b.ledger.decompressed(kept, raw, took)
	}
	if err != nil {
		return out, err
	}
	b.used.Add(int64(n))
	return out, nil
}

// release starts the budget again: what was decompressed before was polled.
func (b *fetchBudget) release() { b.used.Store(0) }

// NewInput returns the Input of Kafka source node source, reading topic through conn;
// schemas, when set, decodes values in the schema registry's wire format.
func NewInput(source, topic string, conn *Conn, schemas *schemaregistry.Registry, log *slog.Logger) *Input {
	k := &Input{source: source, topic: topic, conn: conn, log: log,
		next: map[int32]int64{}, ends: map[int32]int64{}, base: map[int32]int64{}, starts: map[int32]int64{},
		pushedAt: map[int32]time.Time{}, taken: map[int32]int64{}, schemas: schemas, genIDs: map[int64]kadm.TopicID{}}
	k.health.Logger = log.With("source", source, "topic", topic)
	k.decoding.Logger = k.health.Logger
	return k
}

// Restore sets the offsets to read from, per partition, and the topic ID they belong to.
func (k *Input) Restore(positions []connector.Position, identity []byte) error {
	clear(k.next)
	k.restoredID = nil
	if len(identity) == len(kadm.TopicID{}) {
		k.restoredID = (*kadm.TopicID)(identity)
	}
	for _, p := range positions {
		if p.Offset < 0 {
			return fmt.Errorf("kafka source %q: checkpointed offset %d of partition %d is negative", k.source, p.Offset, p.Partition)
		}
		k.next[p.Partition] = p.Offset
	}
	return nil
}

// Start starts the reader goroutine, which connects and fetches until ctx ends or Stop.
func (k *Input) Start(ctx context.Context, wake func()) {
	ctx, k.cancel = context.WithCancel(ctx)
	k.ctx = ctx
	k.rest = nil
	k.batches = make(chan kafkaBatch, 1)
	k.done = make(chan struct{})
	k.health.OnChange(wake)
	k.decoding.OnChange(wake)
	k.wake = wake
	k.ledger, k.handedPoll = &fetchLedger{mem: k.conn.fetchMem, ctx: ctx}, 0
	from := maps.Clone(k.next)
	go k.read(ctx, from, wake)
}

// Stop ends the reader and waits for it.
func (k *Input) Stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	<-k.done
	if k.retry != nil {
		k.retry.Stop()
	}
	k.ledger.close() // the client is closed; the batches not pushed are dropped
}

// read runs in its own goroutine until ctx is done: it connects, assigns the topic's
// partitions at their offsets (from), hands fetched records to the deployment, and lists the
// end offsets between polls.
func (k *Input) read(ctx context.Context, from map[int32]int64, wake func()) {
	defer close(k.done)
	inner, err := boundedDecompressor()
	if err != nil {
		k.health.Set(fmt.Sprintf("kafka client: %v", err))
		return
	}
	budget := &fetchBudget{inner: inner, ledger: k.ledger}
	cl, err := k.conn.sourceClient(k.ledger, maxResponseBytes(),
		kgo.WithDecompressor(budget),
		kgo.FetchMaxBytes(int32(maxFetchBytes)),
		// One fetch at a time, sent only while the reader polls, so that the FetchMemory
		// counts what the client holds (fetchLedger).
		kgo.MaxConcurrentFetches(0),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // transaction markers take offsets: the positions pass them
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(kafkaMetadataAge),
	)
	if err != nil {
		k.health.Set(fmt.Sprintf("kafka client: %v", err))
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	r := &kafkaReader{k: k, cl: cl, adm: adm, assigned: map[int32]bool{}, from: from}
	if k.restoredID != nil {
		r.topicID = *k.restoredID
	}
	var discovered, confirmed time.Time
	for ctx.Err() == nil {
		if len(r.assigned) == 0 || r.rediscover || time.Since(discovered) >= kafkaDiscoverInterval {
			discovered, r.rediscover = time.Now(), false
			if err := r.discover(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				k.health.Set(k.conn.explain(err).Error())
				if len(r.assigned) == 0 {
					sleepCtx(ctx, kafkaRetryDelay)
					continue
				}
			}
		}
		if time.Since(confirmed) >= kafkaConfirmInterval {
			confirmed = time.Now()
			if err := r.confirm(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				k.health.Set(k.conn.explain(err).Error())
				discovered = time.Time{} // look at the topic again: deleted? created again?
			} else {
				k.health.Set("")
				wake() // the answer may let the watermark move on (Listing)
			}
		}
		if !k.listed() {
			// Nothing is fetched before this generation's first listing: the deployment
			// would not take it (poll), and a fetch blocked on handing it over would never
			// list again. Try the listing again soon.
			confirmed = time.Time{}
			sleepCtx(ctx, kafkaRetryDelay)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, pollWait)
		poll := k.ledger.pollStarted()
		fetches := cl.PollRecords(pctx, readBatch)
		cancel()
		budget.release()
		if ctx.Err() != nil {
			return
		}
		var skipped []*kgo.ErrDecompressTooLarge
		fetches.EachError(func(topic string, partition int32, err error) {
			var tooLarge *kgo.ErrDecompressTooLarge
			switch {
			case errors.As(err, &tooLarge):
				if topic == k.topic {
					skipped = append(skipped, tooLarge)
				}
			case errors.Is(err, errFetchBudget), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case strings.Contains(err.Error(), "BrokerMaxReadBytes"):
				// franz-go's error for a response past maxResponseBytes, for no partition: it
				// fetches the same again after a while, so the next listing would clear a
				// health set here; the error is kept for a minute after each try (Status).
				k.mu.Lock()
				k.tooLargeAt = time.Now()
				k.mu.Unlock()
			default:
				k.health.Set(fmt.Sprintf("reading partition %d of topic %q: %v", partition, topic, k.conn.explain(err)))
				k.mu.Lock()
				k.blind = true
				k.mu.Unlock()
			}
		})
		recs := fetches.Records()
		if len(recs) == 0 && len(skipped) == 0 {
			k.ledger.pollFinished(poll, false)
			continue
		}
		k.ledger.pollFinished(poll, true)
		k.mu.Lock()
		k.noteFetched(time.Now())
		k.mu.Unlock()
		select {
		case k.batches <- kafkaBatch{gen: k.readerGen.Load(), poll: poll, recs: recs, skipped: skipped}:
			wake()
		case <-ctx.Done():
			return
		}
		// franz-go stops reading a partition at a batch too large to decompress until its
		// offset is set past it; the batch is the deployment's per-event error (Poll).
		for _, s := range skipped {
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{k.topic: {s.Partition: {Epoch: s.Epoch, Offset: s.NextOffset}}})
		}
	}
}

// kafkaReader is the state of Input.read.
type kafkaReader struct {
	k        *Input
	cl       *kgo.Client
	adm      *kadm.Client
	assigned map[int32]bool
	from     map[int32]int64 // checkpointed offsets to start from
	topicID  kadm.TopicID
	// rediscover: an end-offset listing showed a partition not yet assigned.
	rediscover bool
}

// discover reads the topic's metadata. A topic with another ID than before was deleted and
// created again: its partitions are read again from their start, in a new generation. Then
// partitions not yet assigned are added to the consumer: each at its offset in from, or at
// its log start offset when it has none or when retention deleted the records it would
// start from (logged: those records are lost to the deployment).
func (r *kafkaReader) discover(ctx context.Context) error {
	k := r.k
	mctx, cancel := context.WithTimeout(ctx, kafkaRequestTimeout)
	defer cancel()
	meta, err := r.adm.Metadata(mctx, k.topic)
	if err != nil {
		return fmt.Errorf("reading the metadata of topic %q: %w", k.topic, err)
	}
	td, ok := meta.Topics[k.topic]
	if !ok {
		return fmt.Errorf("topic %q: not in the brokers' metadata", k.topic)
	}
	if td.Err != nil {
		return fmt.Errorf("topic %q: %w", k.topic, td.Err)
	}
	if td.ID != r.topicID && r.topicID != (kadm.TopicID{}) && (len(r.assigned) > 0 || len(r.from) > 0) {
		// Deleted and created again, while the deployment ran or while it was stopped (the
		// checkpoint holds the old ID): the positions belong to the old topic.
		k.log.Warn("the kafka topic was deleted and created again: reading its partitions from their start",
			"source", k.source, "topic", k.topic)
		if len(r.assigned) > 0 {
			r.cl.PurgeTopicsFromClient(k.topic) // its partitions and the old topic ID's metadata
		}
		clear(r.assigned)
		r.from = nil
		k.mu.Lock()
		k.genIDs[k.readerGen.Load()] = r.topicID
		k.readerGen.Add(1)
		clear(k.base)
		clear(k.starts)
		clear(k.ends)
		k.confirmedAt = time.Time{}
		k.mu.Unlock()
	}
	r.topicID = td.ID
	k.mu.Lock()
	k.topicID = td.ID
	k.mu.Unlock()
	listed, err := r.adm.ListStartOffsets(mctx, k.topic)
	if err != nil {
		return fmt.Errorf("listing the partitions of topic %q: %w", k.topic, err)
	}
	if err := listed.Error(); err != nil {
		return fmt.Errorf("topic %q: %w", k.topic, err)
	}
	add := map[int32]kgo.Offset{}
	listed.Each(func(lo kadm.ListedOffset) {
		if lo.Topic != k.topic || lo.Partition < 0 || r.assigned[lo.Partition] {
			return
		}
		at := lo.Offset
		if off, ok := r.from[lo.Partition]; ok {
			if off < lo.Offset {
				k.log.Warn("kafka records were deleted before the deployment read them; reading from the partition's start",
					"source", k.source, "topic", k.topic, "partition", lo.Partition, "checkpointed", off, "start", lo.Offset)
			} else {
				at = off
			}
		}
		add[lo.Partition] = kgo.NewOffset().At(at)
		r.assigned[lo.Partition] = true
		k.mu.Lock()
		k.base[lo.Partition] = at
		k.starts[lo.Partition] = lo.Offset
		k.mu.Unlock()
	})
	if len(r.assigned) == 0 {
		return fmt.Errorf("topic %q has no partitions", k.topic)
	}
	if len(add) > 0 {
		r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: add})
	}
	return nil
}

// confirm lists the end offsets (high watermarks) of the topic's partitions, as of the time it
// asked: what the brokers hold, records of open transactions included, which read_committed
// delivers once they commit. A partition listed but not yet assigned (added to the topic)
// makes discovery run at once, and the listing does not count as caught up.
func (r *kafkaReader) confirm(ctx context.Context) error {
	k := r.k
	if len(r.assigned) == 0 {
		return nil
	}
	sent := time.Now()
	asked := sent.Add(-kafkaMetadataAge) // see kafkaMetadataAge
	gen := k.readerGen.Load()
	k.mu.Lock()
	k.sentAt = sent
	k.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, kafkaRequestTimeout)
	defer cancel()
	var starts kadm.ListedOffsets
	listed, err := r.adm.ListEndOffsets(cctx, k.topic)
	if err == nil {
		err = listed.Error()
	}
	if err == nil {
		starts, err = r.adm.ListStartOffsets(cctx, k.topic)
		if err == nil {
			err = starts.Error()
		}
		if err != nil {
			err = fmt.Errorf("listing the start offsets of topic %q: %w", k.topic, err)
		}
	} else {
		err = fmt.Errorf("listing the end offsets of topic %q: %w", k.topic, err)
	}
	k.mu.Lock()
	k.noteListing(asked, err == nil)
	k.mu.Unlock()
	if err != nil {
		return err
	}
	unassigned := false
	listed.Each(func(lo kadm.ListedOffset) {
		if lo.Topic == k.topic && lo.Partition >= 0 && !r.assigned[lo.Partition] {
			unassigned = true
		}
	})
	if unassigned {
		r.rediscover = true
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if gen != k.readerGen.Load() {
		return nil
	}
	listed.Each(func(lo kadm.ListedOffset) {
		if lo.Topic == k.topic && r.assigned[lo.Partition] {
			k.ends[lo.Partition] = lo.Offset
		}
	})
	starts.Each(func(lo kadm.ListedOffset) {
		if lo.Topic == k.topic && r.assigned[lo.Partition] {
			k.starts[lo.Partition] = lo.Offset
		}
	})
	k.endsGen, k.confirmedAt, k.answeredAt = gen, asked, sent
	return nil
}

// Poll takes the records the reader fetched, once the topic's end offsets are listed.
func (k *Input) Poll() ([]connector.Event, bool) {
	if k.rest == nil && k.handedPoll != 0 {
		// Polled again with nothing left over: the deployment pushed the batch (its
		// events' payloads are the records' bytes).
		k.ledger.pushed(k.handedPoll)
		k.handedPoll = 0
	}
	reset := k.syncGen()
	reset = k.skipDeleted() || reset
	if _, listed := k.PendingPartitions(); !listed {
		// Which partitions have records waiting is not known yet (after a start, or a topic
		// created again): pushing records now could let the per-partition watermark pass
		// partitions not read yet. The reader lists the offsets before it polls.
		return nil, reset
	}
	var b kafkaBatch
	if k.rest != nil {
		b, k.rest = *k.rest, nil
	} else {
		select {
		case b = <-k.batches:
		default:
			return nil, reset
		}
		k.polledAt = time.Now()
	}
	if b.gen != k.gen {
		k.ledger.pushed(b.poll)
		return nil, reset // records of the topic before it was created again
	}
	k.handedPoll = b.poll
	k.take(b)
	// Decoding asks the schema registry (up to schemaregistry.Timeout for each schema id
	// not known yet); a poll decodes for decodeTime at most, and not past a stop, so that the
	// deployment checkpoints and stops on time while a registry hangs. What it did not
	// decode is the next poll's.
	ctx, cancel := context.WithTimeout(k.ctx, decodeTime)
	defer cancel()
	out := make([]connector.Event, len(b.recs), len(b.recs)+len(b.skipped))
	for i, r := range b.recs {
		out[i] = connector.Event{Payload: r.Value, Time: r.Timestamp.UnixMilli(), Line: r.Offset + 1,
			Partition: r.Partition, Offset: r.Offset + 1, Skip: r.Attrs.IsControl()}
		switch {
		case out[i].Skip:
		case len(r.Value) > maxValueBytes:
			out[i].Undecodable = fmt.Errorf("the record value is %d bytes, more than the %d a value may be", len(r.Value), maxValueBytes)
		default:
			out[i].Payload, out[i].Undecodable = k.decode(ctx, r.Value)
			if err := out[i].Undecodable; err != nil && (ctx.Err() != nil || schemaregistry.IsUnreachable(err)) {
				// Not the record's fault: the poll's time ran out, the input stopped, or the
				// registry cannot be reached. The record and those after it wait, in order,
				// for the next poll (rather than becoming dead letters), which is soon:
				// at once after the poll's time, UnreachableTTL later for the registry.
				b.recs = b.recs[i:]
				k.rest = &b
				if ctx.Err() == nil {
					k.decoding.Set(fmt.Sprintf("the records of partition %d from offset %d wait for the schema registry: %v", r.Partition, r.Offset, err))
					k.pollAgain(schemaregistry.UnreachableTTL)
				} else if k.ctx.Err() == nil {
					k.pollAgain(0)
				}
				return out[:i], reset
			}
		}
	}
	k.decoding.Set("")
	// A batch too large to decompress comes after the records fetched before it.
	for _, s := range b.skipped {
		out = append(out, connector.Event{Line: s.Offset + 1, Partition: s.Partition, Offset: s.NextOffset,
			Undecodable: fmt.Errorf("the record batch at offsets %d to %d is too large to read (more than %d bytes decompressed, counting %d bytes a record and %d a header): its records are skipped", s.Offset, s.NextOffset-1, maxBatchBytes, kgoRecordBytes, kgoHeaderBytes)})
	}
	return out, reset
}

// take notes the partitions of b's records as waiting to be pushed (PendingPartitions), up
// to the offset after each one's last record. Each partition's records hold the source's
// watermark back from before the first of the batch is pushed: a batch lists its partitions'
// records one partition after another, and the partition pushed first must not move the
// watermark past records of another that wait behind it in the same batch.
func (k *Input) take(b kafkaBatch) {
	for _, r := range b.recs {
		k.taken[r.Partition] = max(k.taken[r.Partition], r.Offset+1)
	}
	for _, s := range b.skipped {
		k.taken[s.Partition] = max(k.taken[s.Partition], s.NextOffset)
	}
}

// pollAgain wakes the deployment after d to poll again (the timer set before is dropped).
func (k *Input) pollAgain(d time.Duration) {
	if k.wake == nil {
		return
	}
	if k.retry != nil {
		k.retry.Stop()
	}
	k.retry = time.AfterFunc(d, k.wake)
}

// decode is a record value as the JSON the engine reads. With a schema registry, a value in
// its wire format (a zero byte, never the start of JSON) is decoded by the schema its id
// names; a value that cannot be is undecodable, kept as it came for its dead letter. Other
// values are JSON already.
func (k *Input) decode(ctx context.Context, v []byte) ([]byte, error) {
	if k.schemas == nil || !schemaregistry.IsWireFormat(v) {
		return v, nil
	}
	out, err := k.schemas.Decode(ctx, v)
	if err != nil {
		return v, fmt.Errorf("the record value cannot be decoded: %w", err)
	}
	return out, nil
}

// skipDeleted moves the positions below their partition's log start offset up to it:
// retention deleted those records before they were read. It says whether it moved any.
func (k *Input) skipDeleted() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	moved := false
	for p, n := range k.next {
		if start, ok := k.starts[p]; ok && n < start {
			k.log.Warn("kafka records were deleted before the deployment read them; reading on from the partition's start",
				"source", k.source, "topic", k.topic, "partition", p, "position", n, "start", start)
			k.next[p] = start
			moved = true
		}
	}
	return moved
}

// syncGen forgets the positions of a topic the reader found deleted and created again, and
// says whether it did.
func (k *Input) syncGen() bool {
	g := k.readerGen.Load()
	if g == k.gen {
		return false
	}
	clear(k.next)
	clear(k.pushedAt)
	clear(k.taken)
	k.gen = g
	k.mu.Lock()
	maps.DeleteFunc(k.genIDs, func(gen int64, _ kadm.TopicID) bool { return gen < g })
	k.mu.Unlock()
	return true
}

// Advance moves ev's partition past it.
func (k *Input) Advance(ev connector.Event) {
	k.next[ev.Partition] = ev.Offset
	k.pushedAt[ev.Partition] = k.polledAt
}

// Identity is the topic ID the positions belong to: the restored one until the reader knows,
// and the old topic's after the reader found the topic deleted and created again, until Poll
// moves the positions to the new one.
func (k *Input) Identity() []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen != k.readerGen.Load() {
		if id, ok := k.genIDs[k.gen]; ok && id != (kadm.TopicID{}) {
			return bytes.Clone(id[:])
		}
		return nil
	}
	if k.topicID != (kadm.TopicID{}) {
		return bytes.Clone(k.topicID[:])
	}
	if k.restoredID != nil && k.gen == 0 {
		return bytes.Clone(k.restoredID[:])
	}
	return nil
}

// Positions are the next offsets per partition, by partition.
func (k *Input) Positions() []connector.Position {
	parts := slices.Sorted(maps.Keys(k.next))
	out := make([]connector.Position, len(parts))
	for i, p := range parts {
		out[i] = connector.Position{Partition: p, Offset: k.next[p]}
	}
	return out
}

// Status sums over the partitions: known is the end offsets, processed the next offsets.
func (k *Input) Status() connector.Status {
	st := connector.Status{Err: k.health.Get()}
	if st.Err == "" {
		st.Err = k.decoding.Get()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if st.Err == "" && !k.tooLargeAt.IsZero() && time.Since(k.tooLargeAt) < tooLargeShown {
		st.Err = fmt.Sprintf("a response of the brokers is larger than the %d bytes a Kafka source reads (a record batch of more than %d bytes): the partition it comes from is not read past it; its records must be written in smaller batches", maxResponseBytes(), maxValueBytes)
	}
	for p, n := range k.positionsLocked() {
		st.Processed += n
		st.Known += max(n, k.ends[p])
	}
	return st
}

// positionsLocked is, per partition known, the next offset to process. k.mu is held.
func (k *Input) positionsLocked() map[int32]int64 {
	pos := maps.Clone(k.base)
	if k.gen == k.readerGen.Load() {
		maps.Copy(pos, k.next)
	}
	return pos
}

// listed says whether the end offsets of the reader's topic generation have been listed.
func (k *Input) listed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.listedLocked()
}

// listedLocked is listed with k.mu held.
func (k *Input) listedLocked() bool {
	return !k.confirmedAt.IsZero() && k.endsGen == k.readerGen.Load()
}

// PendingPartitions lists the partitions that may have records waiting: those whose end
// offset, as last listed, is beyond the position processed, those not listed yet, those
// with records a poll took and the deployment has not pushed yet (take), and those that had
// records after the last listing (more may have come since). listed is false before the
// first listing of the topic's generation: nothing is known then.
func (k *Input) PendingPartitions() (out []int32, listed bool) {
	if k.gen != k.readerGen.Load() {
		return nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.listedLocked() {
		return nil, false
	}
	for p, pos := range k.positionsLocked() {
		end, listed := k.ends[p]
		if !listed || pos < end || pos < k.taken[p] || !k.pushedAt[p].Before(k.confirmedAt) {
			out = append(out, p)
		}
	}
	return out, true
}

// Listing says when the latest end-offset listing was sent, and when the latest one that
// answered was (zero: none of the reader's topic generation yet). Records fetched before a
// listing was sent are in its end offsets.
func (k *Input) Listing() (sent, answered time.Time) {
	if k.gen != k.readerGen.Load() {
		return time.Time{}, time.Time{}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.listedLocked() {
		return k.sentAt, time.Time{}
	}
	return k.sentAt, k.answeredAt
}

// Partitions lists every partition the input reads.
func (k *Input) Partitions() []int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Collect(maps.Keys(k.positionsLocked()))
}

// IdleClock is the time of the last end-offset listing whose offsets every partition has
// been processed up to (never later than now); false while records wait, or before a
// listing.
func (k *Input) IdleClock(now time.Time) (time.Time, bool) {
	if k.gen != k.readerGen.Load() {
		return time.Time{}, false // poll has not seen the new topic yet
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.listedLocked() {
		return time.Time{}, false
	}
	pos := k.positionsLocked()
	for p, end := range k.ends {
		if pos[p] < end {
			return time.Time{}, false
		}
	}
	if k.confirmedAt.After(now) {
		return now, true
	}
	return k.confirmedAt, true
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// SourceSchemas types a Kafka source's #input from the latest schema of its topic's value
// subject in the schema registry Registry (nodes.SourceSchemas); a topic without a subject
// keeps a dynamic #input.
type SourceSchemas struct{ Registry *schemaregistry.Registry }

// SourceSchema is the JSON Schema of the topic's values, for kind "Source/kafka" only; nil
// when the topic has no subject. It returns by ctx's deadline, and within
// schemaregistry.Timeout.
func (k SourceSchemas) SourceSchema(ctx context.Context, kindID, topic string) ([]byte, error) {
	if kindID != SourceKind {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, schemaregistry.Timeout)
	defer cancel()
	raw, err := k.Registry.InputSchema(ctx, schemaregistry.ValueSubject(topic))
	if schemaregistry.IsSubjectNotFound(err) {
		return nil, nil
	}
	return raw, err
}

var _ connector.Input = (*Input)(nil)
