package deploy

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An outage of the brokers is not silence (hostile round: a broker away for 12 s made 1,785
// records late): the records producers kept while the brokers were away reach them only
// after the input lists the topic again, so the idle timeout counts from there, not from the
// last record before the outage. Worked by hand: tumbling 10 s windows, out-of-orderness 2 s,
// idle timeout 1 s; record A at 17 s (W = 15 s); the brokers refuse fetches and listings for
// 3 s; record B at 16 s is produced once they list again. Counting the outage as silence,
// W = 17 s + (≥ 3 s) − 1 s ≥ 19 s, and more before B arrives: [10 s, 20 s) closes with A
// alone and B is late. Not counting it, B is in time and the window closes by idleness
// later with both: n 2, sum 3.
func TestKafkaOutageIsNotIdleness(t *testing.T) {
	st := sqliteStore(t)
	c := newCluster(t, kfake.SeedTopics(1, "ev"))
	brokers := c.ListenAddrs()
	prod := newProducer(t, brokers)
	var down atomic.Bool
	var listedSinceUp atomic.Int64
	refuse := func(key kmsg.Key) {
		c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if down.Load() {
				return nil, errors.New("the broker is away"), true
			}
			if key == kmsg.ListOffsets {
				listedSinceUp.Add(1)
			}
			return nil, nil, false
		})
	}
	refuse(kmsg.ListOffsets)
	refuse(kmsg.Fetch)
	g := replaceOnce(t, kafkaGraph(t, "ev", "2s"), `{"name": "maxOutOfOrderness", "value": "2s"}`,
		`{"name": "maxOutOfOrderness", "value": "2s"}, {"name": "idleTimeout", "value": "1s"}`)
	createScenario(t, st, "k", g)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers })
	deploy(t, r, "k", 0)

	produce(t, prod, "ev", 0, [][]byte{[]byte(`{"ts": 17000, "key": "k", "v": 1}`)}, nil)
	waitFor(t, "A processed", func() bool { l, _ := r.Live("k"); return l.Sources[0].Processed == 1 })
	down.Store(true)
	time.Sleep(5 * time.Second) // the outage itself, not a wait for something to happen
	listedSinceUp.Store(0)
	down.Store(false)
	waitFor(t, "a listing once the brokers answer again", func() bool { return listedSinceUp.Load() > 0 })
	produce(t, prod, "ev", 0, [][]byte{[]byte(`{"ts": 16000, "key": "k", "v": 2}`)}, nil)
	waitFor(t, "the window closed", func() bool { return len(collected(t, st, "k")) > 0 })
	equalResults(t, collected(t, st, "k"), []string{`{"key":"k","start":10000,"n":2,"sum":3}`})
	if l, _ := r.Live("k"); l.Nodes["win"].Late != 0 {
		t.Errorf("%d records late, want none", l.Nodes["win"].Late)
	}
}

// The same with two partitions (review of the first fix, which left the outage out of the
// source's idle clock only): the kept record of one partition arrives first, the other's a
// second later. Worked by hand: tumbling 10 s windows, out-of-orderness 2 s, idle timeout
// 3 s; a record at 17 s in each partition; the brokers away 5 s; then B at 23 s in partition
// 0 and C at 16 s in partition 1. Counting the outage as partition 1's silence, B alone sets
// the floor (23 s: W = 21 s) and closes [10 s, 20 s), so C is late; counting its silence from
// the brokers' return, partition 1 holds the floor at 17 s (W = 15 s) and C is in time.
func TestKafkaOutageIsNotIdlenessPerPartition(t *testing.T) {
	st := sqliteStore(t)
	c := newCluster(t, kfake.SeedTopics(2, "ev"))
	brokers := c.ListenAddrs()
	prod := newProducer(t, brokers)
	var down atomic.Bool
	var listedSinceUp atomic.Int64
	for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.Fetch} {
		c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if down.Load() {
				return nil, errors.New("the broker is away"), true
			}
			if key == kmsg.ListOffsets {
				listedSinceUp.Add(1)
			}
			return nil, nil, false
		})
	}
	g := replaceOnce(t, kafkaGraph(t, "ev", "2s"), `{"name": "maxOutOfOrderness", "value": "2s"}`,
		`{"name": "maxOutOfOrderness", "value": "2s"}, {"name": "idleTimeout", "value": "3s"}`)
	createScenario(t, st, "k", g)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers })
	deploy(t, r, "k", 0)
	produce(t, prod, "ev", 0, [][]byte{[]byte(`{"ts": 17000, "key": "k", "v": 1}`)}, nil)
	produce(t, prod, "ev", 1, [][]byte{[]byte(`{"ts": 17000, "key": "k", "v": 1}`)}, nil)
	waitFor(t, "the first two processed", func() bool { l, _ := r.Live("k"); return l.Sources[0].Processed == 2 })
	down.Store(true)
	time.Sleep(5 * time.Second) // the outage itself, not a wait for something to happen
	listedSinceUp.Store(0)
	down.Store(false)
	waitFor(t, "a listing once the brokers answer again", func() bool { return listedSinceUp.Load() > 0 })
	produce(t, prod, "ev", 0, [][]byte{[]byte(`{"ts": 23000, "key": "k", "v": 2}`)}, nil)
	waitFor(t, "B processed", func() bool { l, _ := r.Live("k"); return l.Sources[0].Processed == 3 })
	produce(t, prod, "ev", 1, [][]byte{[]byte(`{"ts": 16000, "key": "k", "v": 4}`)}, nil)
	waitFor(t, "C processed", func() bool { l, _ := r.Live("k"); return l.Sources[0].Processed == 4 })
	waitFor(t, "the window closed", func() bool { return len(collected(t, st, "k")) > 0 })
	equalResults(t, collected(t, st, "k")[:1], []string{`{"key":"k","start":10000,"n":3,"sum":6}`})
	if l, _ := r.Live("k"); l.Nodes["win"].Late != 0 {
		t.Errorf("%d records late, want none", l.Nodes["win"].Late)
	}
}
