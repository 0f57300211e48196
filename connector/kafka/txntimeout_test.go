package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
	"github.com/scenario-server/scenario-server/value"
)

// The brokers keep a sink's transaction open for Cluster.TransactionTimeout: 15 minutes
// (900,000 ms) by default, 90 s (90,000 ms) when set so, as DescribeTransactions shows of the
// transaction a checkpoint prepared.
func TestTransactionTimeoutGivenToTheBrokers(t *testing.T) {
	for _, tc := range []struct {
		set  time.Duration
		want int32
	}{{0, 900_000}, {90 * time.Second, 90_000}} {
		o, conn, _ := newTestOutputWith(t, Cluster{TransactionTimeout: tc.set})
		o.Write(value.Int(1))
		if _, err := o.Prepare(t.Context()); err != nil {
			t.Fatal(err)
		}
		cl, err := conn.Client()
		if err != nil {
			t.Fatal(err)
		}
		id := o.prepared.transactional
		d, err := kadm.NewClient(cl).DescribeTransactions(t.Context(), id)
		cl.Close()
		if err != nil || d[id].TimeoutMillis != tc.want || d[id].State != "Ongoing" {
			t.Errorf("set %v: the brokers hold %+v (%v); want an ongoing transaction of %d ms", tc.set, d[id], err, tc.want)
		}
		o.Commit(t.Context())
	}
}

// Brokers whose transaction.max.timeout.ms is below the timeout refuse it: the checkpoint's
// error says which setting to change. Timeouts under a second are refused at start.
func TestTransactionTimeoutRefused(t *testing.T) {
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "out"),
		kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"})).ListenAddrs()
	conn, err := NewConn(brokers, Cluster{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOutput("k", "out", "s", false, conn, discard)
	defer o.Close()
	if err := o.Restore(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	o.Write(value.Int(1))
	_, err = o.Prepare(t.Context())
	if err == nil || !strings.Contains(err.Error(), "refuse the transaction timeout of 15m0s") || !strings.Contains(err.Error(), "lower --kafka-transaction-timeout") {
		t.Errorf("Prepare against brokers allowing 60 s: %v; want the refused timeout explained", err)
	}
	for _, d := range []time.Duration{-time.Second, 999 * time.Millisecond} {
		if _, err := NewConn(brokers, Cluster{TransactionTimeout: d}, nil); err == nil || !strings.Contains(err.Error(), "between 1s and") {
			t.Errorf("NewConn with a transaction timeout of %v: %v; want it refused", d, err)
		}
	}
}
