package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/internal/kafkatest"
)

func TestKafkaTopics(t *testing.T) {
	t.Run("no runtime", func(t *testing.T) {
		c := newClient(t, sqliteStore(t))
		c.get("/api/kafka/topics").problem(t, http.StatusServiceUnavailable, api.CodeKafkaNotConfigured)
	})
	t.Run("no brokers", func(t *testing.T) {
		c := newDeployClient(t, sqliteStore(t))
		c.get("/api/kafka/topics").problem(t, http.StatusServiceUnavailable, api.CodeKafkaNotConfigured)
	})
	t.Run("topics sorted, internal ones left out", func(t *testing.T) {
		cluster := kafkatest.Cluster(t, kfake.SeedTopics(3, "payments", "alerts"))
		brokers := cluster.ListenAddrs()
		// Two more by hand, one of them with the internal prefix.
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		created, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, "decisions", "__private")
		if err == nil {
			err = created.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		c := newDeployClient(t, sqliteStore(t), func(c *deploy.Config) { c.KafkaBrokers = brokers })
		var got api.KafkaTopics
		c.get("/api/kafka/topics").ok(t, http.StatusOK, &got)
		if want := []string{"alerts", "decisions", "payments"}; !slices.Equal(got.Topics, want) {
			t.Errorf("topics %q, want %q", got.Topics, want)
		}
	})
	t.Run("brokers gone", func(t *testing.T) {
		cluster := kafkatest.Cluster(t, kfake.SeedTopics(1, "payments"))
		brokers := cluster.ListenAddrs()
		cluster.Close() // nothing listens there any more
		c := newDeployClient(t, sqliteStore(t), func(c *deploy.Config) { c.KafkaBrokers = brokers })
		c.get("/api/kafka/topics").problem(t, http.StatusServiceUnavailable, api.CodeKafkaUnavailable)
	})
	// The right password lists the topics; a wrong one is refused, explained without the password.
	sasl := kafkatest.Cluster(t, kfake.SeedTopics(1, "payments"), kfake.EnableSASL(), kfake.Superuser(deploy.SASLScramSHA256, "alice", "wonderland"))
	for _, password := range []string{"wonderland", "looking-glass"} {
		t.Run("SASL password "+password, func(t *testing.T) {
			c := newDeployClient(t, sqliteStore(t), func(c *deploy.Config) {
				c.KafkaBrokers = sasl.ListenAddrs()
				c.Kafka = deploy.KafkaCluster{SASLMechanism: deploy.SASLScramSHA256, SASLUser: "alice", SASLPassword: password}
			})
			if password == "wonderland" {
				var got api.KafkaTopics
				c.get("/api/kafka/topics").ok(t, http.StatusOK, &got)
				if want := []string{"payments"}; !slices.Equal(got.Topics, want) {
					t.Errorf("topics %q, want %q", got.Topics, want)
				}
				return
			}
			p := c.get("/api/kafka/topics").problem(t, http.StatusServiceUnavailable, api.CodeKafkaUnavailable)
			if !strings.Contains(p.Detail, "check the Kafka SASL settings") || strings.Contains(p.Detail, password) {
				t.Errorf("detail %q: want the refused login explained, without the password", p.Detail)
			}
		})
	}
}

// A list of the Kafka topics holds its place until its client has read it: a client that
// asks and does not read keeps its one place (its next asks are answered 429 at once, not
// with another copy of the list), and gives it back when it goes (hostile round 160: 1,500
// clients that did not read held a 3.8 MB copy each, until "fatal error: out of memory").
func TestKafkaTopicListsHeldUntilRead(t *testing.T) {
	names := make([]string, 24_000) // about 5.8 MB of JSON: more than the socket buffers hold
	for i := range names {
		names[i] = fmt.Sprintf("%0240d", i)
	}
	cluster := kafkatest.Cluster(t, kfake.SeedTopics(1, names...))
	c := newDeployClient(t, sqliteStore(t), func(c *deploy.Config) { c.KafkaBrokers = cluster.ListenAddrs() })
	conn := unreadGet(t, c, "/api/kafka/topics", "")
	// Until the list that is not read is being written, another ask is answered whole. (Each
	// ask lists the 24,000 topics again: asked every 10 ms, with 20 s to wait, the asks kept
	// the one not read from being written in a package run under -race, load 3.)
	deadline := time.Now().Add(90 * time.Second)
	var res *response
	for res = c.get("/api/kafka/topics"); res.Status == http.StatusOK; res = c.get("/api/kafka/topics") {
		if time.Now().After(deadline) {
			t.Fatal("the list that is not read never held its place")
		}
		time.Sleep(250 * time.Millisecond)
	}
	p := res.problem(t, http.StatusTooManyRequests, api.CodeRateLimited)
	if !strings.Contains(p.Detail, "a list of the Kafka topics being answered") || res.Header.Get("Retry-After") != "1" {
		t.Errorf("refused with %q, Retry-After %q", p.Detail, res.Header.Get("Retry-After"))
	}
	conn.Close() // the client goes: the write fails, the place is given back
	deadline = time.Now().Add(90 * time.Second)
	for {
		var got api.KafkaTopics
		if res := c.get("/api/kafka/topics"); res.Status == http.StatusOK {
			res.ok(t, http.StatusOK, &got)
			if len(got.Topics) != len(names) || got.Topics[0] != names[0] {
				t.Errorf("%d topics, the first %.10q; want %d", len(got.Topics), got.Topics[0], len(names))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the place of the client gone was never given back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
