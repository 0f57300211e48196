package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/scenario-server/scenario-server/store"
)

// lateRecord is an event 20 s after records(n)'s last: its watermark (less the graph's 2 s
// of out-of-orderness) closes every 10 s window of those records.
func lateRecord(n int) []byte {
	ts := int64(1_700_000_000_000) + int64(n)*137 + 20_000
	return fmt.Appendf(nil, `{"ts": %d, "key": "k0", "v": 0}`, ts)
}

// The server dies between the store's commit of a checkpoint and Kafka's commit of its
// transaction, and nothing comes after the restart: the restart commits the recorded
// transaction at once (a checkpoint of its own), not when new events come. Without it a
// read_committed consumer saw none of the transaction's records until the source's idle
// timeout (3 minutes here), and none ever when the brokers' transaction timeout came first.
// The 1,000 records are processed and committed first; then one event closes their last
// windows, and the checkpoint that holds those results is the one the crash interrupts.
func TestRestartSettlesTheTransactionAtOnce(t *testing.T) {
	st := sqliteStore(t)
	cs := &crashAfterCommit{Store: st, committed: make(chan struct{})}
	brokers, _ := newKafka(t, map[string]int32{"decisions": 1})
	createScenario(t, st, "k", tumblingGraph(kafkaSinkRef("decisions")))
	cfg := func(c *Config) { c.KafkaBrokers = brokers }
	r := newRuntime(t, cs, cfg)
	deploy(t, r, "k", 0)
	recs := records(1000)
	ingestAll(t, r, "k", recs, 0, 250)
	waitCommitted(t, r, "k", 1000)
	recs = append(recs, lateRecord(1000))
	cs.armed.Store(true)
	ingestAll(t, r, "k", recs, 1000, 1)
	select {
	case <-cs.committed:
	case <-time.After(30 * time.Second):
		t.Fatal("no checkpoint with a Kafka transaction")
	}
	r.abort() // SIGKILL between the two commits
	want := kafkaOracle(t, recs)

	newRuntime(t, st, cfg)
	// A read_committed consumer reads to the end once the transaction is committed (and
	// fails after a minute while it is open).
	equalResults(t, committedOutput(t, brokers, "decisions"), want)
}

// A checkpoint's store commit succeeds and its Kafka commit (EndTxn) fails, and keeps failing
// through the deployment's last checkpoint; then the scenario is redeployed. The transaction
// the store recorded is committed by the new deployment once the coordinator answers again:
//   - redeployed as a version without a Kafka sink, its transaction went to no sink and was
//     never committed (read_committed saw none of its records);
//   - canceled, the cancel says so in the deployment's status, and a deployment of the same
//     version later commits it.
func TestUnsettledTransactionAfterTheDeployment(t *testing.T) {
	for _, how := range []string{"version without a Kafka sink", "cancel"} {
		t.Run(how, func(t *testing.T) {
			k := endTxnFailing(t)
			st, r, brokers, failEnd, endTxns, want := k.st, k.r, k.brokers, &k.failEnd, &k.endTxns, k.want
			switch how {
			case "cancel":
				sd, err := r.Cancel(t.Context(), "k", "ann", "stop")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(sd.Reason, "not known committed") || !strings.Contains(sd.Reason, "a deployment of the scenario started before the brokers' transaction timeout commits") {
					t.Errorf("the cancel's reason %q does not say a transaction is left", sd.Reason)
				}
				failEnd.Store(false)
				deploy(t, r, "k", 1)
			default:
				if _, err := st.SaveVersion(t.Context(), "k", 1, store.Draft{Graph: []byte(tumblingGraph(""))}); err != nil {
					t.Fatal(err)
				}
				// The new deployment's first checkpoint waits for the coordinator: it answers
				// again once that deployment has asked (one EndTxn more than the old one's
				// last checkpoint made).
				before := endTxns.Load()
				go func() {
					for endTxns.Load() < before+2 {
						time.Sleep(5 * time.Millisecond)
					}
					failEnd.Store(false)
				}()
				deploy(t, r, "k", 2)
			}
			equalResults(t, committedOutput(t, brokers, "decisions"), want)
		})
	}
}

// A new version without a Kafka sink whose first checkpoint waits to commit the inherited
// transaction (EndTxn failing), canceled before it could: the cancel's reason says a
// transaction is left, as a running deployment's does (re-test: it said nothing); deployed
// again once the coordinator answers, the records are committed.
func TestCancelWhileSettlingTheInheritedTransaction(t *testing.T) {
	k := endTxnFailing(t)
	st, r, brokers, want := k.st, k.r, k.brokers, k.want
	if _, err := st.SaveVersion(t.Context(), "k", 1, store.Draft{Graph: []byte(tumblingGraph(""))}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	if d, err := r.Deploy(ctx, DeployRequest{Scenario: "k", Version: 2, User: "ann"}); err == nil {
		t.Fatalf("version 2 deployed (%s) with the coordinator away", d.Status)
	}
	cancel()
	sd, err := r.Cancel(t.Context(), "k", "ann", "stop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sd.Reason, "not known committed") {
		t.Errorf("the cancel's reason %q does not say a transaction is left", sd.Reason)
	}
	k.failEnd.Store(false)
	deploy(t, r, "k", 1)
	equalResults(t, committedOutput(t, brokers, "decisions"), want)
}

// endTxnDeployment is the scenario "k" (tumbling windows into a Kafka sink to topic
// decisions, on brokers whose EndTxn fails while failEnd is set; endTxns counts them)
// deployed, its 1,000 records committed, then one more that closes their last windows,
// whose checkpoint the store committed and Kafka did not; want is the replay's records.
type endTxnDeployment struct {
	st      store.Store
	r       *Runtime
	brokers []string
	failEnd atomic.Bool
	endTxns atomic.Int64
	want    []string
}

func endTxnFailing(t *testing.T) *endTxnDeployment {
	t.Helper()
	k := &endTxnDeployment{st: sqliteStore(t)}
	c := newCluster(t)
	k.brokers = c.ListenAddrs()
	createTopic(t, newProducer(t, k.brokers), "decisions", 1)
	c.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		k.endTxns.Add(1)
		if k.failEnd.Load() {
			return nil, errors.New("the coordinator is away"), true
		}
		return nil, nil, false
	})
	createScenario(t, k.st, "k", tumblingGraph(kafkaSinkRef("decisions")))
	k.r = newRuntime(t, k.st, func(c *Config) { c.KafkaBrokers = k.brokers })
	deploy(t, k.r, "k", 0)
	recs := records(1000)
	ingestAll(t, k.r, "k", recs, 0, 250)
	waitCommitted(t, k.r, "k", 1000)
	// One event closes the last windows; its checkpoint's Kafka commit fails.
	k.failEnd.Store(true)
	recs = append(recs, lateRecord(1000))
	ingestAll(t, k.r, "k", recs, 1000, 1)
	waitCommitted(t, k.r, "k", 1001)
	k.want = kafkaOracle(t, recs)
	return k
}
