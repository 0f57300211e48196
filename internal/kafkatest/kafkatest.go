// Package kafkatest holds what tests need to read a Kafka topic back.
package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadTopic reads every partition of topic from its start up to its end offsets as listed
// when it is called, with the isolation level given (kgo.ReadCommitted: only committed
// transactions' records), and returns the records, transaction markers left out, in the
// order fetched (each partition in offset order). opts are added to the client's (TLS,
// SASL). It fails t when the end is not reached within a minute.
func ReadTopic(t testing.TB, brokers []string, topic string, level kgo.IsolationLevel, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("listing the end offsets of %s: %v", topic, err)
	}
	next := map[int32]int64{} // per partition, the offset after the last record fetched
	reached := func() bool {
		ok := true
		ends.Each(func(lo kadm.ListedOffset) { ok = ok && next[lo.Partition] >= lo.Offset })
		return ok
	}
	var out []*kgo.Record
	for !reached() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: at offsets %v after a minute", topic, next)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// Cluster is a one-broker kfake cluster with opts (kfake.SeedTopics, kfake.EnableSASL, ...),
// closed when t ends.
func Cluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// DenyDescribeConfigs makes cluster refuse every DescribeConfigs request, each resource
// TOPIC_AUTHORIZATION_FAILED, as brokers do for a client whose ACLs let it produce and not
// describe the topic's configs.
func DenyDescribeConfigs(cluster *kfake.Cluster) {
	cluster.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		r := req.(*kmsg.DescribeConfigsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.TopicAuthorizationFailed.Code
			resp.Resources = append(resp.Resources, res)
		}
		return resp, nil, true
	})
}
