package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/deploy"
)

// kafkaTopicsTimeout bounds how long GET /api/kafka/topics waits for the brokers.
const kafkaTopicsTimeout = 3 * time.Second

// KafkaTopics is the answer of GET /api/kafka/topics.
type KafkaTopics struct {
	Topics []string `json:"topics" doc:"The topics' names, sorted; internal topics (the brokers' own, and those whose name starts with __) left out." example:"[\"decisions\",\"payments\"]"`
}

type kafkaTopicsOutput struct {
	Body KafkaTopics
}

func (h *handlers) registerKafka(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "list-kafka-topics",
		Method:      http.MethodGet,
		Path:        "/api/kafka/topics",
		Summary:     "List the Kafka topics",
		Description: "The topics of the server's Kafka brokers (--kafka-brokers, with the cluster's TLS and SASL settings), " +
			"for the designer to suggest in the topic parameter of Kafka sources and sinks. " +
			"503 with code kafka-not-configured when the server has no brokers, and with code kafka-unavailable " +
			"when they do not answer within 3 s (or refuse the login). The callers share one listing at a time, and a list is answered " +
			"again for 5 s: a topic created since may show up to 5 s later.",
		Tags:   []string{tagComponents},
		Errors: []int{http.StatusServiceUnavailable},
	}, h.kafkaTopics)
}

func (h *handlers) kafkaTopics(ctx context.Context, _ *struct{}) (*kafkaTopicsOutput, error) {
	if h.runtime == nil {
		return nil, newProblem(http.StatusServiceUnavailable, CodeKafkaNotConfigured, deploy.ErrNoKafka.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, kafkaTopicsTimeout)
	defer cancel()
	topics, err := h.runtime.KafkaTopics(ctx)
	switch {
	case errors.Is(err, deploy.ErrNoKafka):
		return nil, newProblem(http.StatusServiceUnavailable, CodeKafkaNotConfigured, err.Error())
	case err != nil:
		loggerFrom(ctx).Warn("listing the Kafka topics failed", "error", err)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, problemf(http.StatusServiceUnavailable, CodeKafkaUnavailable, "the Kafka brokers did not list their topics within %s: %v", kafkaTopicsTimeout, err)
		}
		return nil, problemf(http.StatusServiceUnavailable, CodeKafkaUnavailable, "the Kafka brokers did not list their topics: %v", err)
	}
	return &kafkaTopicsOutput{Body: KafkaTopics{Topics: topics}}, nil
}
