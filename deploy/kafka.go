package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/store"
)

// Tuning of Kafka inputs.
const (
	// kafkaDiscoverInterval is how often a Kafka input looks for partitions added to its
	// topic (and how long one poll waits for records).
	kafkaDiscoverInterval = 10 * time.Second
	// kafkaRetryDelay is the wait before trying again to reach the brokers or the topic.
	kafkaRetryDelay = time.Second
)

// kafkaInput reads one topic, every partition, with franz-go as a direct consumer (no
// consumer group): the partitions' offsets live in the deployment's checkpoints, not in
// Kafka, as Flink's KafkaSource keeps them in its state. A partition without a checkpointed
// offset is read from its start (the log start offset). Records are read with isolation level
// read_committed, so aborted transactions are skipped. Partitions added to the topic later are
// found within kafkaDiscoverInterval and read from their start.
//
// A record's value is the event (a JSON object); its timestamp is the event time when the
// source has no timestamp expression. Per-event errors give the record's offset + 1 as their
// line.
type kafkaInput struct {
	source, topic string
	brokers       []string
	log           *slog.Logger

	// next is, per partition, the offset after the last record pushed. Owned by the
	// deployment's goroutine.
	next map[int32]int64

	batches chan []*kgo.Record
	cancel  context.CancelFunc
	done    chan struct{}
	problem problem

	mu   sync.Mutex
	ends map[int32]int64 // per partition: the high watermark of the last fetch
	base map[int32]int64 // per partition: the offset reading started from
}

func newKafkaInput(source, topic string, brokers []string, log *slog.Logger) *kafkaInput {
	return &kafkaInput{source: source, topic: topic, brokers: brokers, log: log,
		next: map[int32]int64{}, ends: map[int32]int64{}, base: map[int32]int64{}}
}

func (k *kafkaInput) restore(positions []store.SourcePosition) error {
	clear(k.next)
	for _, p := range positions {
		if p.Offset < 0 {
			return fmt.Errorf("kafka source %q: checkpointed offset %d of partition %d is negative", k.source, p.Offset, p.Partition)
		}
		k.next[p.Partition] = p.Offset
	}
	return nil
}

func (k *kafkaInput) start(ctx context.Context, wake func()) {
	ctx, k.cancel = context.WithCancel(ctx)
	k.batches = make(chan []*kgo.Record, 1)
	k.done = make(chan struct{})
	k.problem.mu.Lock()
	k.problem.onChange = wake
	k.problem.mu.Unlock()
	from := maps.Clone(k.next)
	go k.read(ctx, from, wake)
}

func (k *kafkaInput) stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	<-k.done
}

// read runs in its own goroutine until ctx is done: it connects, assigns the topic's
// partitions at their offsets (from), and hands fetched records to the deployment.
func (k *kafkaInput) read(ctx context.Context, from map[int32]int64, wake func()) {
	defer close(k.done)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(k.brokers...),
		kgo.ClientID("scenario-server"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		k.problem.set(fmt.Sprintf("kafka client: %v", err))
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	assigned := map[int32]bool{}
	var discovered time.Time
	for ctx.Err() == nil {
		if len(assigned) == 0 || time.Since(discovered) >= kafkaDiscoverInterval {
			discovered = time.Now()
			if err := k.assign(ctx, cl, adm, assigned, from); err != nil {
				if ctx.Err() != nil {
					return
				}
				k.problem.set(err.Error())
				if len(assigned) == 0 {
					sleepCtx(ctx, kafkaRetryDelay)
					continue
				}
			}
		}
		pctx, cancel := context.WithTimeout(ctx, kafkaDiscoverInterval)
		fetches := cl.PollRecords(pctx, readBatch)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var fetchErr error
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fetchErr = fmt.Errorf("reading partition %d of topic %q: %w", partition, topic, err)
			}
		})
		k.mu.Lock()
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Err == nil && p.HighWatermark >= 0 {
				k.ends[p.Partition] = p.HighWatermark
			}
		})
		k.mu.Unlock()
		if fetchErr != nil {
			k.problem.set(fetchErr.Error())
		} else if len(assigned) > 0 {
			k.problem.set("")
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			continue
		}
		select {
		case k.batches <- recs:
			wake()
		case <-ctx.Done():
			return
		}
	}
}

// assign adds the topic's partitions not yet assigned to the consumer: each at its offset in
// from, or at its log start offset when it has none or when retention deleted the records
// it would start from (logged: those records are lost to the deployment).
func (k *kafkaInput) assign(ctx context.Context, cl *kgo.Client, adm *kadm.Client, assigned map[int32]bool, from map[int32]int64) error {
	listed, err := adm.ListStartOffsets(ctx, k.topic)
	if err != nil {
		return fmt.Errorf("listing the partitions of topic %q: %w", k.topic, err)
	}
	if err := listed.Error(); err != nil {
		return fmt.Errorf("topic %q: %w", k.topic, err)
	}
	add := map[int32]kgo.Offset{}
	listed.Each(func(lo kadm.ListedOffset) {
		if lo.Topic != k.topic || lo.Partition < 0 || assigned[lo.Partition] {
			return
		}
		at := lo.Offset
		if off, ok := from[lo.Partition]; ok {
			if off < lo.Offset {
				k.log.Warn("kafka records were deleted before the deployment read them; reading from the partition's start",
					"source", k.source, "topic", k.topic, "partition", lo.Partition, "checkpointed", off, "start", lo.Offset)
			} else {
				at = off
			}
		}
		add[lo.Partition] = kgo.NewOffset().At(at)
		assigned[lo.Partition] = true
		k.mu.Lock()
		k.base[lo.Partition] = at
		k.mu.Unlock()
	})
	if len(assigned) == 0 {
		return fmt.Errorf("topic %q has no partitions", k.topic)
	}
	if len(add) > 0 {
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: add})
	}
	return nil
}

func (k *kafkaInput) poll() []inputEvent {
	var recs []*kgo.Record
	select {
	case recs = <-k.batches:
	default:
		return nil
	}
	out := make([]inputEvent, len(recs))
	for i, r := range recs {
		out[i] = inputEvent{payload: r.Value, time: r.Timestamp.UnixMilli(), line: r.Offset + 1,
			partition: r.Partition, offset: r.Offset + 1}
	}
	return out
}

func (k *kafkaInput) advance(ev inputEvent) { k.next[ev.partition] = ev.offset }

func (k *kafkaInput) positions() []store.SourcePosition {
	parts := slices.Sorted(maps.Keys(k.next))
	out := make([]store.SourcePosition, len(parts))
	for i, p := range parts {
		out[i] = store.SourcePosition{Source: k.source, Partition: p, Offset: k.next[p]}
	}
	return out
}

// status sums over the partitions: known is the high watermarks, processed the next offsets.
func (k *kafkaInput) status() inputStatus {
	st := inputStatus{err: k.problem.get()}
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[int32]bool{}
	for p, n := range k.next {
		seen[p] = true
		st.processed += n
		st.known += max(n, k.ends[p])
	}
	for p, b := range k.base {
		if !seen[p] {
			st.processed += b
			st.known += max(b, k.ends[p])
		}
	}
	return st
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
