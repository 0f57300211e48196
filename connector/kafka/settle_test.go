package kafka

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
)

type txnEnv struct {
	c     *kfake.Cluster
	addrs []string
	conn  *Conn
	o     *Output
}

func txnSetup(t *testing.T, partitions int32, txnTimeout time.Duration, old bool) *txnEnv {
	t.Helper()
	opts := []kfake.Opt{kfake.SeedTopics(partitions, "out")}
	if old {
		opts = append(opts, kfake.MaxVersions(kversion.V3_6_0()))
	}
	c := kafkatest.Cluster(t, opts...)
	addrs := c.ListenAddrs()
	conn, err := NewConn(addrs, Cluster{TransactionTimeout: txnTimeout}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOutput("k", "out", "s", false, conn, discard)
	t.Cleanup(o.Close)
	if err := o.Restore(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	return &txnEnv{c, addrs, conn, o}
}

func (e *txnEnv) write(keys ...string) {
	for _, k := range keys {
		r := &kgo.Record{Topic: "out", Key: []byte(k), Value: []byte(k)}
		e.o.pending = append(e.o.pending, r)
		e.o.pendingBytes += recordBytes(r)
	}
}

func (e *txnEnv) committed(t *testing.T) []string {
	var out []string
	for _, r := range kafkatest.ReadTopic(t, e.addrs, "out", kgo.ReadCommitted()) {
		out = append(out, string(r.Value))
	}
	sort.Strings(out)
	return out
}

// writeAndPrepare writes records of keys and prepares them as one checkpoint.
func (e *txnEnv) writeAndPrepare(t *testing.T, keys ...string) {
	t.Helper()
	e.write(keys...)
	if _, err := e.o.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// writeAndCommit writes records of keys and commits them as one checkpoint.
func (e *txnEnv) writeAndCommit(t *testing.T, keys ...string) {
	t.Helper()
	e.writeAndPrepare(t, keys...)
	e.o.Commit(t.Context())
}

// zombie is a second producer of the transactional id that writes a transaction of its own
// (records of keys, each its value too) and commits it, or aborts it: it fences ours.
func (e *txnEnv) zombie(t *testing.T, transactional string, commit bool, keys ...string) {
	t.Helper()
	ctx := t.Context()
	z, _ := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.TransactionalID(transactional), kgo.DefaultProduceTopic("out"))
	defer z.Close()
	if err := z.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := z.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(k)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// deleteAll deletes partition 0's records (data and markers), as retention or DeleteRecords
// does.
func (e *txnEnv) deleteAll(t *testing.T) {
	t.Helper()
	acl, _ := kgo.NewClient(kgo.SeedBrokers(e.addrs...))
	defer acl.Close()
	ends, _ := kadm.NewClient(acl).ListEndOffsets(t.Context(), "out")
	end, _ := ends.Lookup("out", 0)
	if err := e.c.DeleteRecords("out", 0, end.Offset); err != nil {
		t.Fatal(err)
	}
}

func keys(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

func sorted(s ...[]string) []string {
	var out []string
	for _, x := range s {
		out = append(out, x...)
	}
	sort.Strings(out)
	return out
}

// Multi-partition; the commit's answer lost, then a zombie fences: no duplicates (review round).
func TestMultiPartitionCommittedThenFenced(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprint("old=", old), func(t *testing.T) {
			e := txnSetup(t, 4, 0, old)
			ctx := t.Context()
			a := keys("a", 40)
			e.writeAndPrepare(t, a...)
			txn := *e.o.prepared
			other, _ := kgo.NewClient(kgo.SeedBrokers(e.addrs...))
			defer other.Close()
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txn.transactional, txn.producerID, txn.epoch, true
			if resp, err := req.RequestWith(ctx, other); err != nil || resp.ErrorCode != 0 {
				t.Fatalf("commit: %v %v", err, resp)
			}
			h := e.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TopLevel: true, Err: kerr.UnknownServerError, Count: -1})
			e.o.Commit(ctx)
			h.Remove()
			// zombie: fences, and writes an aborted transaction of its own on every partition
			e.zombie(t, txn.transactional, false, keys("z", 20)...)
			b := keys("b", 10)
			e.writeAndCommit(t, b...)
			if got, want := e.committed(t), sorted(a, b); !slices.Equal(got, want) {
				t.Errorf("committed %d records, want %d (a once, b once)", len(got), len(want))
			}
		})
	}
}

// Multi-partition; aborted on its timeout before Commit: produced again, once.
func TestMultiPartitionAbortedProducedAgain(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprint("old=", old), func(t *testing.T) {
			e := txnSetup(t, 4, 1500*time.Millisecond, old)
			ctx := t.Context()
			a := keys("a", 40)
			e.writeAndPrepare(t, a...)
			waitAborted(t, e.conn, e.o.prepared.transactional)
			e.o.Commit(ctx)
			b := keys("b", 10)
			e.writeAndCommit(t, b...)
			if got, want := e.committed(t), sorted(a, b); !slices.Equal(got, want) {
				t.Errorf("committed %d records %v, want %d", len(got), got, len(want))
			}
		})
	}
}

// abortedUnsettled: on Kafka 3.6 brokers, a checkpoint's transaction aborted on its timeout
// before Commit; the Output holds it unsettled with its records.
func abortedUnsettled(t *testing.T, partitions int32) (*txnEnv, kafkaTxn, []string) {
	e := txnSetup(t, partitions, 1500*time.Millisecond, true)
	ctx := t.Context()
	a := keys("a", 5)
	e.writeAndPrepare(t, a...)
	txn := *e.o.prepared
	waitAborted(t, e.conn, txn.transactional)
	e.o.Commit(ctx)
	if e.o.Unsettled() == "" {
		t.Fatal("the commit did not fail")
	}
	return e, txn, a
}

// The first record's partition's records (data and marker) deleted (retention,
// DeleteRecords) before the retry; a zombie of the id commits a transaction after.
func TestDeletedRecordsThenZombieCommit(t *testing.T) {
	e, txn, a := abortedUnsettled(t, 1)
	e.deleteAll(t)
	e.zombie(t, txn.transactional, true, "Z")
	e.writeAndCommit(t, "b")
	if got, want := e.committed(t), sorted(a, []string{"Z", "b"}); !slices.Equal(got, want) {
		t.Errorf("committed %v, want %v (the aborted transaction's records produced again)", got, want)
	}
}

// The same deletion without a zombie: the Output settles (it waited out every checkpoint's
// deadline for records that could no longer come), the records produced again.
func TestDeletedRecordsDoNotStall(t *testing.T) {
	e, _, a := abortedUnsettled(t, 1)
	ctx := t.Context()
	e.deleteAll(t)
	e.write("b")
	for i := range 3 {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		_, err := e.o.Prepare(pctx)
		cancel()
		t.Logf("try %d: %v after %v (unsettled %q)", i, err, time.Since(start).Round(time.Millisecond), e.o.Unsettled())
		if err == nil {
			e.o.Commit(ctx)
			// How the transaction ended cannot be read: produced again (at least once).
			if got, want := e.committed(t), sorted(a, []string{"b"}); !slices.Equal(got, want) {
				t.Errorf("committed %v, want %v", got, want)
			}
			return
		}
	}
	t.Errorf("three checkpoints in a row failed: the deployment cannot checkpoint while the marker's partition start is past the transaction")
}

// The topic deleted and created again between the abort and the retry: the Output settles
// ("no marker ... still open" at every try before), the records produced again.
func TestTopicRecreatedDoesNotStall(t *testing.T) {
	e, _, a := abortedUnsettled(t, 1)
	ctx := t.Context()
	acl, _ := kgo.NewClient(kgo.SeedBrokers(e.addrs...))
	defer acl.Close()
	adm := kadm.NewClient(acl)
	if _, err := adm.DeleteTopics(ctx, "out"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	e.write("b")
	for i := range 3 {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		_, err := e.o.Prepare(pctx)
		cancel()
		t.Logf("try %d: %v after %v", i, err, time.Since(start).Round(time.Millisecond))
		if err == nil {
			e.o.Commit(ctx)
			// How the transaction ended cannot be read: produced again (at least once).
			if got, want := e.committed(t), sorted(a, []string{"b"}); !slices.Equal(got, want) {
				t.Errorf("committed %v, want %v", got, want)
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("three checkpoints in a row failed after the topic was created again")
}

// Aborted on its timeout (3.6), then a zombie of the id commits a transaction after
// ours (same producer id, bumped epoch): our abort marker comes first.
func TestAbortedThenZombieCommits(t *testing.T) {
	e, txn, a := abortedUnsettled(t, 3)
	e.zombie(t, txn.transactional, true, keys("z", 6)...)
	e.writeAndCommit(t, "b")
	if got, want := e.committed(t), sorted(a, keys("z", 6), []string{"b"}); !slices.Equal(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
}

// Records of a committed checkpoint that the brokers aborted, once taken back for the next
// transaction, are still what the Output has not settled (a stop then says so): the 5 of
// abortedUnsettled, after settle found their transaction aborted.
func TestRequeuedRecordsAreUnsettled(t *testing.T) {
	e, _, _ := abortedUnsettled(t, 1)
	if err := e.o.settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := e.o.Unsettled(), `kafka sink "k" (topic "out"): 5 records of committed checkpoints to produce again`; got != want {
		t.Errorf("unsettled %q, want %q", got, want)
	}
}
