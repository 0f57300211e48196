package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"

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

// KafkaTopicListsAtOnce is how many topic lists are answered at once, their writing
// included, and KafkaTopicListsPerClient how many of one identity (or client address); more
// are answered 503 requests-busy and 429 rate-limited at once. Each answer is the whole
// list, encoded for it (3.8 MB for 20,000 topics of 186 bytes): 1,500 clients asking and
// not reading held a copy each until the server died, "fatal error: out of memory" (hostile
// round 160).
const (
	KafkaTopicListsAtOnce    = 4
	KafkaTopicListsPerClient = 1
)

func (h *handlers) registerKafka(hapi huma.API) {
	lists := &places{most: KafkaTopicListsAtOnce, perClient: KafkaTopicListsPerClient, byKey: map[string]int{},
		clientFull: func() *ProblemDetails {
			return problemf(http.StatusTooManyRequests, CodeRateLimited,
				"you have a list of the Kafka topics being answered, as many as one client has at once; retry when it has been read")
		},
		serverFull: func() *ProblemDetails {
			return problemf(http.StatusServiceUnavailable, CodeRequestsBusy,
				"the server is answering %d lists of the Kafka topics, as many as it does at once; retry in a second", KafkaTopicListsAtOnce)
		}}
	register(hapi, h, huma.Operation{
		OperationID: "list-kafka-topics",
		Method:      http.MethodGet,
		Path:        "/api/kafka/topics",
		Summary:     "List the Kafka topics",
		Description: "The topics of the server's Kafka brokers (--kafka-brokers, with the cluster's TLS and SASL settings), " +
			"for the designer to suggest in the topic parameter of Kafka sources and sinks. " +
			"503 with code kafka-not-configured when the server has no brokers, and with code kafka-unavailable " +
			"when they do not answer within 3 s (or refuse the login). The callers share one listing at a time, and a list is answered " +
			"again for 5 s: a topic created since may show up to 5 s later. At most 4 lists are answered at once (until their clients have read them), " +
			"another answered 503 requests-busy, and 1 of one identity (or client address), another answered 429 rate-limited.",
		Tags:   []string{tagComponents},
		Errors: []int{http.StatusTooManyRequests, http.StatusServiceUnavailable},
		// The place is held until the answer is written: what a list holds is its encoding,
		// kept until its client has read it.
		Middlewares: huma.Middlewares{func(ctx huma.Context, next func(huma.Context)) {
			r, w := humachi.Unwrap(ctx)
			lists.serve(w, r, "1", func() { next(ctx) })
		}},
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
