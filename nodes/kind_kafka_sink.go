package nodes

import (
	"github.com/scenario-server/scenario-server/expression"
)

// SinkKafka is the subtype of the Kafka sink (Sink/kafka).
const SinkKafka = "kafka"

// maxTopicLength is the longest Kafka topic name (Kafka's own limit).
const maxTopicLength = 249

// kafkaSinkKind writes a record per event to a Kafka topic: value (JSON), an optional key and
// optional headers. Deployed it is exactly-once (deploy/kafkasink.go); in a run or a test run
// it writes {"key", "value", "headers"} to the output as other sinks write their value.
func kafkaSinkKind() *Kind {
	k := sinkKind(SinkKafka, "Kafka sink",
		"Writes a record per event to a Kafka topic, on the brokers the server was started with (--kafka-brokers): the value as JSON, an optional key and headers. Deployed, exactly-once: the records of a checkpoint go into one Kafka transaction, committed with it (read them with isolation level read_committed).",
		ParamSpec{Name: "topic", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Topic",
			Description: "The Kafka topic to write to.", Aliases: []string{"Topic"}},
		ParamSpec{Name: "key", In: InParameters, Editor: EditorExpression, Label: "Key",
			Description: "Optional: the record's key; a string is written as its bytes, anything else as JSON. Without it, records have no key.",
			Aliases:     []string{"Key"}},
		kafkaValueSpec,
		ParamSpec{Name: "headers", In: InParameters, Editor: EditorExpression, Type: "record", Label: "Headers",
			Description: "Optional: a record {name: value} of the record's headers; a string is written as its bytes, anything else as JSON; null values are left out.",
			Aliases:     []string{"Headers"}},
		ParamSpec{Name: "valueSubject", In: InParameters, Editor: EditorString, Type: "string", Label: "Value subject",
			Description: "Optional, deployed with a schema registry (--kafka-schema-registry): the subject, e.g. TOPIC-value, whose latest schema (Avro or JSON Schema) the value is encoded against, in the registry's wire format. A value that does not fit is an error at the sink, field value."},
	)
	k.check = checkKafkaSink
	return k
}

// kafkaValueSpec is valueSpec with Nussknacker's name for it.
var kafkaValueSpec = func() ParamSpec {
	v := valueSpec
	v.Aliases = []string{"Value"}
	return v
}()

func checkKafkaSink(c *nodeCheck) {
	if topic, ok := c.stringParam("topic"); ok {
		checkTopicName(c, "topic", topic)
	}
	if c.given("valueSubject") {
		if s, ok := c.stringParam("valueSubject"); ok && s == "" {
			c.errorf("valueSubject", CodeInvalidParameter, "parameter %q must not be empty", "valueSubject")
		}
	}
	env := c.in.env()
	if e := c.expressionParam("key"); e != nil {
		c.compile("key", e, env, expression.Unknown)
	}
	if e := c.expressionParam("value"); e != nil {
		c.compile("value", e, env, expression.Unknown)
	}
	if e := c.expressionParam("headers"); e != nil {
		if prog := c.compile("headers", e, env, expression.Unknown); prog != nil {
			if t := prog.Result(); t.Kind != expression.KindRecord && t.Kind != expression.KindUnknown {
				c.resultProblem("headers", e, "the headers must be a record {name: value}, but they are %s", t)
			}
		}
	}
	c.out = nil
}

// checkTopicName reports a name Kafka refuses as a topic: empty, ".", "..", longer than 249
// characters, or with characters other than ASCII letters, digits, '.', '_' and '-'.
func checkTopicName(c *nodeCheck, field, name string) {
	switch {
	case name == "":
		c.errorf(field, CodeInvalidParameter, "parameter %q must not be empty", field)
		return
	case name == "." || name == "..":
		c.errorf(field, CodeInvalidParameter, "%q is not a Kafka topic name", name)
		return
	case len(name) > maxTopicLength:
		c.errorf(field, CodeInvalidParameter, "a Kafka topic name has at most %d characters, this one %d", maxTopicLength, len(name))
		return
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			c.errorf(field, CodeInvalidParameter, "Kafka topic %q has the character %q: use ASCII letters, digits, '.', '_' and '-'", name, r)
			return
		}
	}
}
