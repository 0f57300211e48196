package kafka

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/connector"
)

// Between the reader finding the topic deleted and created again and the next poll, the
// positions are still the old topic's offsets: a checkpoint taken then (say, while the rest
// of a cut poll is pushed) records them with the old topic's ID, so that a restore reads the
// new topic from its start (found by review). Before, Identity was nil in that window, and a
// restore applied the old offsets to the new topic: with 3 old records read, the new topic's
// first 3 records were skipped.
func TestIdentityWhileTheTopicIsRecreated(t *testing.T) {
	conn, prod := testCluster(t, 1, "ev")
	adm := kadm.NewClient(prod)
	produce := func(cl *kgo.Client, values ...string) {
		for _, v := range values {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(prod, `{"a":1}`, `{"a":2}`, `{"a":3}`)

	in := NewInput("in", "ev", conn, nil, discard)
	if err := in.Restore(nil, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in.Start(ctx, func() {})
	defer in.Stop()
	pollAll(t, in, 3)
	old := in.Identity()
	if len(old) != 16 {
		t.Fatalf("identity %x, want the topic's 16-byte ID", old)
	}

	if _, err := adm.DeleteTopics(t.Context(), "ev"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, "ev"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for in.readerGen.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reader did not find the topic created again in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A checkpoint now, before the next poll.
	pos, id := in.Positions(), in.Identity()
	if !slices.Equal(pos, []connector.Position{{Partition: 0, Offset: 3}}) || !bytes.Equal(id, old) {
		t.Fatalf("checkpoint at %+v with identity %x; want offset 3 of the old topic %x", pos, id, old)
	}
	prod2, err := conn.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())) // the old one keeps the old topic's ID
	if err != nil {
		t.Fatal(err)
	}
	defer prod2.Close()
	produce(prod2, `{"b":1}`, `{"b":2}`, `{"b":3}`, `{"b":4}`)
	again := NewInput("in", "ev", conn, nil, discard)
	if err := again.Restore(pos, id); err != nil {
		t.Fatal(err)
	}
	again.Start(ctx, func() {})
	defer again.Stop()
	var got []string
	for _, ev := range pollAll(t, again, 4) {
		got = append(got, string(ev.Payload))
	}
	if want := []string{`{"b":1}`, `{"b":2}`, `{"b":3}`, `{"b":4}`}; !slices.Equal(got, want) {
		t.Errorf("restored: %v, want the new topic from its start %v", got, want)
	}
}
