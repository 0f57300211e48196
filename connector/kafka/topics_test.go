package kafka

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
)

// Topics shares one listing among its callers and answers it again for TopicsFresh: 50 callers
// at once make one listing (the brokers see a new client's ApiVersions once or twice: its seed
// connection and the broker's), a topic created within TopicsFresh is not listed yet, and once
// TopicsFresh has passed the next caller lists it. Before, each call was a new client: 50
// callers, at least 50 connections.
func TestTopicsShared(t *testing.T) {
	cluster := kafkatest.Cluster(t, kfake.SeedTopics(1, "payments"))
	var connections atomic.Int64
	cluster.ControlKey(int16(kmsg.ApiVersions), func(kmsg.Request) (kmsg.Response, error, bool) {
		connections.Add(1)
		return nil, nil, false // counted, then handled as usual
	})
	c, err := NewConn(cluster.ListenAddrs(), Cluster{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	c.topics.now = func() time.Time { return time.Unix(clock.Load(), 0) }
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	list := func(want ...string) {
		t.Helper()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if got, err := c.Topics(ctx); err != nil || !slices.Equal(got, want) {
					t.Errorf("topics %q, %v; want %q", got, err, want)
				}
			})
		}
		wg.Wait()
	}
	list("payments")
	if n := connections.Load(); n < 1 || n > 2 {
		t.Fatalf("50 callers at once: %d connections to the brokers, want the one listing's 1 or 2", n)
	}

	admin, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if created, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, "decisions"); err != nil || created.Error() != nil {
		t.Fatalf("creating a topic: %v %v", err, created.Error())
	}
	before := connections.Load()
	clock.Store(int64(TopicsFresh/time.Second) - 1)
	list("payments")
	if n := connections.Load() - before; n != 0 {
		t.Errorf("within TopicsFresh: %d connections, want none", n)
	}
	clock.Store(int64(TopicsFresh / time.Second))
	list("decisions", "payments")
	if n := connections.Load() - before; n < 1 || n > 2 {
		t.Errorf("after TopicsFresh: %d connections, want one listing's 1 or 2", n)
	}
}
