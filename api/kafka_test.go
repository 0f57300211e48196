package api_test

import (
	"context"
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
