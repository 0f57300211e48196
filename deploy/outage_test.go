package deploy

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// outage is a deployed scenario "k" reading topic "ev" of a one-broker cluster whose
// listings and fetches can be refused, as while the broker is away (producing still works:
// the producers that kept records during an outage send them once it ends).
type outage struct {
	r    *Runtime
	prod *kgo.Client
	// down refuses listings and fetches, unlisted listings only; listed counts the listings
	// served since reset.
	down, unlisted atomic.Bool
	listed         atomic.Int64
	// Fetches from broker holdNode - 1 (0: none) wait until release is closed; held counts
	// them.
	holdNode atomic.Int32
	held     atomic.Int64
	release  chan struct{}
	c        *kfake.Cluster
}

// newOutage deploys the tumbling graph (10 s windows, out-of-orderness 2 s, idle timeout
// idle) on topic "ev" of partitions partitions, on a cluster of one broker unless opts say
// otherwise; prepare runs before the deployment.
func newOutage(t *testing.T, partitions int, idle string, prepare func(*kfake.Cluster), opts ...kfake.Opt) (*outage, func() []string) {
	st := sqliteStore(t)
	c := newCluster(t, append([]kfake.Opt{kfake.SeedTopics(int32(partitions), "ev")}, opts...)...)
	if prepare != nil {
		prepare(c)
	}
	brokers := c.ListenAddrs()
	o := &outage{prod: newProducer(t, brokers), c: c, release: make(chan struct{})}
	for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.Fetch} {
		c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if o.down.Load() || (key == kmsg.ListOffsets && o.unlisted.Load()) {
				return nil, errors.New("the broker is away"), true
			}
			if key == kmsg.Fetch && o.holdNode.Load() == c.CurrentNode()+1 {
				o.held.Add(1)
				c.SleepControl(func() { <-o.release })
			}
			if key == kmsg.ListOffsets {
				o.listed.Add(1)
			}
			return nil, nil, false
		})
	}
	g := replaceOnce(t, kafkaGraph(t, "ev", "2s"), `{"name": "maxOutOfOrderness", "value": "2s"}`,
		`{"name": "maxOutOfOrderness", "value": "2s"}, {"name": "idleTimeout", "value": "`+idle+`"}`)
	createScenario(t, st, "k", g)
	o.r = newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers })
	deploy(t, o.r, "k", 0)
	return o, func() []string { return collected(t, st, "k") }
}

// away refuses listings and fetches for d (the outage itself: a sleep that is the outage,
// not a wait for something to happen), then waits for a listing served after it.
func (o *outage) away(t *testing.T, d time.Duration) {
	t.Helper()
	o.down.Store(true)
	time.Sleep(d)
	o.listed.Store(0)
	o.down.Store(false)
	waitFor(t, "a listing once the brokers answer again", func() bool { return o.listed.Load() > 0 })
}

// processed waits until n records of the source are processed.
func (o *outage) processed(t *testing.T, n int64) {
	t.Helper()
	waitFor(t, "records processed", func() bool { l, _ := o.r.Live("k"); return l.Sources[0].Processed == n })
}

// An outage of the brokers is not silence (hostile round: a broker away for 12 s made 1,785
// records late): the records producers kept while the brokers were away reach them only
// after the input sees the brokers again, so the idle timeout counts from there, not from
// the last record before the outage. Worked by hand: tumbling 10 s windows, out-of-orderness
// 2 s, idle timeout 1 s; record A at 17 s (W = 15 s); the brokers refuse fetches and listings
// for 5 s; record B at 16 s is produced once they list again. Counting the outage as silence,
// W = 17 s + (≥ 5 s) − 1 s ≥ 21 s: [10 s, 20 s) closes with A alone and B is late. Not
// counting it, B is in time and the window closes by idleness later with both: n 2, sum 3.
func TestKafkaOutageIsNotIdleness(t *testing.T) {
	o, results := newOutage(t, 1, "1s", nil)
	produce(t, o.prod, "ev", 0, [][]byte{[]byte(`{"ts": 17000, "key": "k", "v": 1}`)}, nil)
	o.processed(t, 1)
	o.away(t, 5*time.Second)
	produce(t, o.prod, "ev", 0, [][]byte{[]byte(`{"ts": 16000, "key": "k", "v": 2}`)}, nil)
	waitFor(t, "the window closed", func() bool { return len(results()) > 0 })
	equalResults(t, results(), []string{`{"key":"k","start":10000,"n":2,"sum":3}`})
	if l, _ := o.r.Live("k"); l.Nodes["win"].Late != 0 {
		t.Errorf("%d records late, want none", l.Nodes["win"].Late)
	}
}

// The same with two partitions (review of the first fix, which left the outage out of the
// source's idle clock only): the kept record of one partition arrives first, the other's
// after it. Worked by hand: tumbling 10 s windows, out-of-orderness 2 s, idle timeout 5 s;
// a record at 17 s in each partition; the brokers away 7 s; then B at 23 s in partition 0
// and C at 16 s in partition 1 (within 5 s of the brokers' return, even under -race).
// Counting the outage as partition 1's silence, B alone sets the floor (23 s: W = 21 s) and
// closes [10 s, 20 s), so C is late; counting its silence from the brokers' return,
// partition 1 holds the floor at 17 s (W = 15 s) and C is in time.
func TestKafkaOutageIsNotIdlenessPerPartition(t *testing.T) {
	o, results := newOutage(t, 2, "5s", nil)
	produce(t, o.prod, "ev", 0, [][]byte{[]byte(`{"ts": 17000, "key": "k", "v": 1}`)}, nil)
	produce(t, o.prod, "ev", 1, [][]byte{[]byte(`{"ts": 17000, "key": "k", "v": 1}`)}, nil)
	o.processed(t, 2)
	o.away(t, 7*time.Second)
	produce(t, o.prod, "ev", 0, [][]byte{[]byte(`{"ts": 23000, "key": "k", "v": 2}`)}, nil)
	o.processed(t, 3)
	produce(t, o.prod, "ev", 1, [][]byte{[]byte(`{"ts": 16000, "key": "k", "v": 4}`)}, nil)
	o.processed(t, 4)
	waitFor(t, "the window closed", func() bool { return len(results()) > 0 })
	equalResults(t, results()[:1], []string{`{"key":"k","start":10000,"n":3,"sum":6}`})
	if l, _ := o.r.Live("k"); l.Nodes["win"].Late != 0 {
		t.Errorf("%d records late, want none", l.Nodes["win"].Late)
	}
}

// produceBothPartitions sends, in one produce request, 17 s (v 1) and 30 s (v 2) to
// partition 0 and 16 s (v 4) and 31 s (v 8) to partition 1, after the first record at 1 s
// (v 0) of partition 0 was processed and with listings refused: the records of the tests of
// partitions fetched together and apart.
func (o *outage) produceBothPartitions(t *testing.T) {
	t.Helper()
	recs := []*kgo.Record{
		{Topic: "ev", Partition: 0, Value: []byte(`{"ts": 17000, "key": "k", "v": 1}`)},
		{Topic: "ev", Partition: 0, Value: []byte(`{"ts": 30000, "key": "k", "v": 2}`)},
		{Topic: "ev", Partition: 1, Value: []byte(`{"ts": 16000, "key": "k", "v": 4}`)},
		{Topic: "ev", Partition: 1, Value: []byte(`{"ts": 31000, "key": "k", "v": 8}`)},
	}
	if err := o.prod.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// The records of two partitions fetched together are all pushed before either moves the
// source's watermark past the other's (TestKafkaCrashRecovery failed so, once, under load).
// A first record at 1 s in partition 0 (v 0) shows that the input listed the topic,
// partition 1 empty; then listings are refused, so that no listing comes between the
// records and their fetch (under load, none did). Worked by hand: tumbling 10 s windows,
// out-of-orderness 2 s; one produce request of 17 s and 30 s to partition 0, and 16 s and
// 31 s to partition 1. Pushed one partition after the other, partition 1 neither pending
// nor bounding W, the first one's 30 s (or 31 s) alone moves W to 28 s (29 s) and closes
// [10 s, 20 s) with its own record, and the other's 16 s (17 s) is late: n 1. Two things
// each prevent it: the records a poll took keep their partitions pending until pushed
// (connector/kafka TestPolledPartitionsArePending), and partition 1, empty at the last
// listing, bounds W by what that listing knew (1 s). W moves to min(30 s, 31 s) − 2 s =
// 28 s once both are in: n 2, sum 1 + 4 = 5.
func TestKafkaPartitionsFetchedTogether(t *testing.T) {
	o, results := newOutage(t, 2, "1m", nil)
	produce(t, o.prod, "ev", 0, [][]byte{[]byte(`{"ts": 1000, "key": "k", "v": 0}`)}, nil)
	o.processed(t, 1)
	o.unlisted.Store(true)
	o.produceBothPartitions(t)
	o.processed(t, 5)
	waitFor(t, "the windows closed", func() bool { return len(results()) > 1 })
	equalResults(t, results(), []string{`{"key":"k","start":0,"n":1,"sum":0}`, `{"key":"k","start":10000,"n":2,"sum":5}`})
	if l, _ := o.r.Live("k"); l.Nodes["win"].Late != 0 {
		t.Errorf("%d records late, want none", l.Nodes["win"].Late)
	}
}

// The same with the two partitions on two brokers, so that they come in two fetches: the
// records of partition 1 reach the deployment after those of partition 0, which has moved on
// (the broker of partition 1 answers its fetches late). A first record at 1 s in partition 0
// (v 0) shows that the input listed the topic, partition 1 empty. Worked by hand as above,
// with partition 0's records fetched first: they may not move W past what the last listing knew
// (1 s), since partition 1, empty then, may have had records produced
// since; the next listing finds partition 1's, which then hold W back until they are
// pushed. W = min(30 s, 31 s) − 2 s = 28 s: [0 s, 10 s) with n 1, sum 0, and [10 s, 20 s)
// with n 2, sum 5. Taking partition 0's records alone, W = 28 s at once: n 1, sum 1, and
// 16 s is late.
func TestKafkaPartitionsFetchedApart(t *testing.T) {
	o, results := newOutage(t, 2, "1m", func(c *kfake.Cluster) {
		for p := range int32(2) { // partition p on broker p
			if err := c.MoveTopicPartition("ev", p, p); err != nil {
				t.Fatal(err)
			}
		}
	}, kfake.NumBrokers(2))
	if o.c.LeaderFor("ev", 0) == o.c.LeaderFor("ev", 1) {
		t.Fatalf("both partitions are led by broker %d", o.c.LeaderFor("ev", 0))
	}
	// Nothing is fetched before a listing: a first record processed shows one was made.
	produce(t, o.prod, "ev", 0, [][]byte{[]byte(`{"ts": 1000, "key": "k", "v": 0}`)}, nil)
	o.processed(t, 1)
	// Partition 1's broker holds its fetches from the next one on (that one comes after the
	// fetch in flight, which may have begun before).
	o.holdNode.Store(o.c.LeaderFor("ev", 1) + 1)
	waitFor(t, "a fetch held", func() bool { return o.held.Load() > 0 })
	o.unlisted.Store(true)
	o.produceBothPartitions(t)
	o.processed(t, 3)
	// Listings again, while partition 1's records still wait on their broker: one finds
	// them, and must hold W back before it lets partition 0's records count (review: the
	// deployment applied the listing's bound before the pending partitions it found, and
	// closed [10 s, 20 s) with partition 0's record alone). A listing is 4 requests here (end
	// and start offsets from each broker), one after another: 9 served after the reset
	// include a whole listing and the next one's start, after the deployment was woken for
	// the first.
	o.listed.Store(0)
	o.unlisted.Store(false)
	waitFor(t, "listings served", func() bool { return o.listed.Load() >= 9 })
	close(o.release)
	o.processed(t, 5)
	waitFor(t, "the windows closed", func() bool { return len(results()) > 1 })
	equalResults(t, results(), []string{`{"key":"k","start":0,"n":1,"sum":0}`, `{"key":"k","start":10000,"n":2,"sum":5}`})
	if l, _ := o.r.Live("k"); l.Nodes["win"].Late != 0 {
		t.Errorf("%d records late, want none", l.Nodes["win"].Late)
	}
}
