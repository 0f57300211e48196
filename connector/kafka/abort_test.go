package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
	"github.com/scenario-server/scenario-server/value"
)

// A checkpoint the store committed, whose Kafka transaction the brokers aborted before its
// commit reached them (the transaction timeout passed while the store's answer was in
// doubt): the Output still holds its records and produces them again, first, in the next
// transaction. Worked out by hand, read_committed: nothing after the failed commit, then 1,
// 2, 3, 4, 5 once each (the two aborted transactions' records in their order, then the new
// one's). The same on brokers before KIP-890 (Kafka 3.x), which bump the producer epoch when
// they abort a transaction on its timeout, so the commit sent with the recorded epoch is
// answered PRODUCER_FENCED rather than INVALID_TXN_STATE (it lost 1 to 4 there).
func TestAbortedTransactionOfACommittedCheckpointIsProducedAgain(t *testing.T) {
	for _, brokers := range []struct {
		name string
		opts []kfake.Opt
	}{{"KIP-890", nil}, {"Kafka 3.6", []kfake.Opt{kfake.MaxVersions(kversion.V3_6_0())}}} {
		t.Run(brokers.name, func(t *testing.T) {
			o, conn, committed := newTestOutputWith(t, Cluster{TransactionTimeout: 1500 * time.Millisecond}, brokers.opts...)
			ctx := t.Context()
			// Two checkpoints in a row whose transactions the brokers abort before Commit.
			for _, batch := range [][]int64{{1, 2}, {3, 4}} {
				for _, v := range batch {
					o.Write(value.Int(v))
				}
				if _, err := o.Prepare(ctx); err != nil {
					t.Fatal(err)
				}
				waitAborted(t, conn, o.prepared.transactional)
				o.Commit(ctx)
			}
			if got := committed(); len(got) != 0 {
				t.Fatalf("after the aborted transactions: %v committed", got)
			}
			o.Write(value.Int(5))
			if _, err := o.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			o.Commit(ctx)
			if got := committed(); !slices.Equal(got, []string{"1", "2", "3", "4", "5"}) {
				t.Fatalf("committed %v, want 1 to 5 once each, in order", got)
			}
		})
	}
}

// waitAborted waits until the brokers no longer hold transaction id open (its timeout passed).
func waitAborted(t *testing.T, conn *Conn, id string) {
	t.Helper()
	cl, err := conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := adm.DescribeTransactions(t.Context(), id)
		if err == nil {
			if st, ok := d[id]; ok && st.State != "Ongoing" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %q still open after 30 s: %v %v", id, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The brokers committed a checkpoint's transaction but the producer's EndTxn answer was
// lost (the Output keeps it unsettled, with its records); before the Output retries the
// commit, another producer initialises the same transactional id (a zombie server of the
// deployment, lease lost), which bumps the epoch. The retry is answered PRODUCER_FENCED
// although the transaction committed: its marker says so, and the records are not produced
// again (review: taking every PRODUCER_FENCED for an abort committed them twice, 1 2 1 2 3).
func TestCommittedThenFencedIsNotProducedAgain(t *testing.T) {
	for _, brokers := range []struct {
		name string
		opts []kfake.Opt
	}{{"KIP-890", nil}, {"Kafka 3.6", []kfake.Opt{kfake.MaxVersions(kversion.V3_6_0())}}} {
		t.Run(brokers.name, func(t *testing.T) {
			c := kafkatest.Cluster(t, append([]kfake.Opt{kfake.SeedTopics(1, "out")}, brokers.opts...)...)
			addrs := c.ListenAddrs()
			conn, err := NewConn(addrs, Cluster{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			o := NewOutput("k", "out", "s", false, conn, discard)
			t.Cleanup(o.Close)
			if err := o.Restore(t.Context(), nil, nil); err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			o.Write(value.Int(1))
			o.Write(value.Int(2))
			if _, err := o.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			txn := *o.prepared
			// The brokers commit it...
			other, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txn.transactional, txn.producerID, txn.epoch, true
			resp, err := req.RequestWith(ctx, other)
			if err != nil || resp.ErrorCode != 0 {
				t.Fatalf("committing: %v %v", err, resp)
			}
			// ...but the producer's own EndTxn fails (its answer lost).
			h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TopLevel: true, Err: kerr.UnknownServerError, Count: -1})
			o.Commit(ctx)
			h.Remove()
			if o.Unsettled() == "" {
				t.Fatal("the commit did not fail")
			}
			if got := committedValues(t, addrs); !slices.Equal(got, []string{"1", "2"}) {
				t.Fatalf("after the commit: %v", got)
			}
			// A zombie producer with the same transactional id bumps the epoch.
			z, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(txn.transactional))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := z.ProducerID(ctx); err != nil {
				t.Fatal(err)
			}
			z.Close()
			o.Write(value.Int(3))
			if _, err := o.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			o.Commit(ctx)
			if got := committedValues(t, addrs); !slices.Equal(got, []string{"1", "2", "3"}) {
				t.Fatalf("committed %v, want 1, 2, 3 once each", got)
			}
		})
	}
}

func committedValues(t *testing.T, addrs []string) []string {
	var out []string
	for _, r := range kafkatest.ReadTopic(t, addrs, "out", kgo.ReadCommitted()) {
		out = append(out, string(r.Value))
	}
	return out
}
