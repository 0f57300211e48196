package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ErrNoKafka is KafkaTopics' error when the server has no Kafka brokers (Config.KafkaBrokers).
var ErrNoKafka = errors.New("the server has no Kafka brokers (--kafka-brokers)")

// KafkaTopics lists the topics of the brokers of Config.KafkaBrokers, with their client id,
// TLS and SASL, sorted by name. Internal topics (the brokers' own, and any whose name starts
// with "__") are left out. It waits for the brokers until ctx ends: the caller gives it a
// deadline. Errors: ErrNoKafka without brokers; otherwise the brokers' or ctx's error, with a
// refused login or an untrusted certificate explained.
func (r *Runtime) KafkaTopics(ctx context.Context) ([]string, error) {
	if len(r.kafka.brokers) == 0 {
		return nil, ErrNoKafka
	}
	cl, err := r.kafka.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the Kafka topics: %w", r.kafka.explain(err))
	}
	names := make([]string, 0, len(details))
	for name, d := range details {
		if !d.IsInternal && !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}
