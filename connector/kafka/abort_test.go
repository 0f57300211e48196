package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kversion"

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
