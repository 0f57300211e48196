package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/value"
)

// A Kafka sink (Sink/kafka) writes the record {key, value, headers} of each event to the
// engine's Output: the deployment turns it into a Kafka record of its next transaction
// (connector/kafka/sink.go); a run or a test run writes it as other sinks write their value. Key
// and headers are optional; headers must be a record.

// SinkKafka is the subtype of the Kafka sink (Sink/kafka).
const SinkKafka = "kafka"

// maxTopicLength is the longest Kafka topic name (Kafka's own limit).
const maxTopicLength = 249

// kafkaSinkKind writes a record per event to a Kafka topic: value (JSON), an optional key and
// optional headers. Deployed it is exactly-once (connector/kafka/sink.go); in a run or a test run
// it writes {"key", "value", "headers"} to the output as other sinks write their value.
func kafkaSinkKind() *nodes.Kind {
	k := sinkKind(SinkKafka, "Kafka sink",
		"Writes a record per event to a Kafka topic, on the brokers the server was started with (--kafka-brokers): the value as JSON, an optional key and headers. Deployed, exactly-once: the records of a checkpoint go into one Kafka transaction, committed with it (read them with isolation level read_committed).",
		nodes.ParamSpec{Name: "topic", In: nodes.InParameters, Editor: nodes.EditorString, Type: "string", Required: true, Label: "Topic",
			Description: "The Kafka topic to write to.", Aliases: []string{"Topic"}},
		nodes.ParamSpec{Name: "key", In: nodes.InParameters, Editor: nodes.EditorExpression, Label: "Key",
			Description: "Optional: the record's key; a string is written as its bytes, anything else as JSON. Without it, records have no key.",
			Aliases:     []string{"Key"}},
		kafkaValueSpec,
		nodes.ParamSpec{Name: "headers", In: nodes.InParameters, Editor: nodes.EditorExpression, Type: "record", Label: "Headers",
			Description: "Optional: a record {name: value} of the record's headers; a string is written as its bytes, anything else as JSON; null values are left out.",
			Aliases:     []string{"Headers"}},
		nodes.ParamSpec{Name: "valueSubject", In: nodes.InParameters, Editor: nodes.EditorString, Type: "string", Label: "Value subject",
			Description: "Optional, deployed with a schema registry (--kafka-schema-registry): the subject, e.g. TOPIC-value, whose latest schema (Avro or JSON Schema) the value is encoded against, in the registry's wire format. A value that does not fit is an error at the sink, field value."},
	)
	k.Validate, k.Runtime = checkKafkaSink, builder(newKafkaSink)
	return k
}

// kafkaValueSpec is valueSpec with Nussknacker's name for it.
var kafkaValueSpec = func() nodes.ParamSpec {
	v := valueSpec
	v.Aliases = []string{"Value"}
	return v
}()

func checkKafkaSink(c *nodes.Check) {
	if topic, ok := c.String("topic"); ok {
		checkTopicName(c, "topic", topic)
	}
	if c.Given("valueSubject") {
		if s, ok := c.String("valueSubject"); ok && s == "" {
			c.Errorf("valueSubject", nodes.CodeInvalidParameter, "parameter %q must not be empty", "valueSubject")
		}
	}
	env := c.In().Env()
	if e := c.ExpressionParam("key"); e != nil {
		c.Compile("key", e, env, expression.Unknown)
	}
	if e := c.ExpressionParam("value"); e != nil {
		c.Compile("value", e, env, expression.Unknown)
	}
	if e := c.ExpressionParam("headers"); e != nil {
		if prog := c.Compile("headers", e, env, expression.Unknown); prog != nil {
			if t := prog.Result(); t.Kind != expression.KindRecord && t.Kind != expression.KindUnknown {
				c.ResultProblem("headers", e, "the headers must be a record {name: value}, but they are %s", t)
			}
		}
	}
	c.SetOut(nodes.Scope{})
}

// checkTopicName reports a name Kafka refuses as a topic: empty, ".", "..", longer than 249
// characters, or with characters other than ASCII letters, digits, '.', '_' and '-'.
func checkTopicName(c *nodes.Check, field, name string) {
	switch {
	case name == "":
		c.Errorf(field, nodes.CodeInvalidParameter, "parameter %q must not be empty", field)
		return
	case name == "." || name == "..":
		c.Errorf(field, nodes.CodeInvalidParameter, "%q is not a Kafka topic name", name)
		return
	case len(name) > maxTopicLength:
		c.Errorf(field, nodes.CodeInvalidParameter, "a Kafka topic name has at most %d characters, this one %d", maxTopicLength, len(name))
		return
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			c.Errorf(field, nodes.CodeInvalidParameter, "Kafka topic %q has the character %q: use ASCII letters, digits, '.', '_' and '-'", name, r)
			return
		}
	}
}

// Fields of the record a Kafka sink hands to Output, in order: "key" when the sink has a key,
// "value", and "headers" when it has headers.
const (
	KafkaKey     = "key"
	KafkaValue   = "value"
	KafkaHeaders = "headers"
)

type kafkaSink struct {
	value, key, headers *evaluator // key and headers nil when not given
	valueField          string
	valueSubject        string   // encode the value against it (Options.EncodeKafkaValue); "": no
	keys                []string // the fields of the record handed to Output
	// record and vals are the record handed to Output, reused from event to event: an Output
	// value is valid only during the call (engine.Output).
	record value.Value
	vals   []value.Value
	// enc and scratch measure a record's JSON (KafkaRecordBytes).
	enc     value.JSONEncoder
	scratch []byte
}

// releaseEvent drops the last record handed to Output (eventHolder), and the JSON scratch a
// large one grew.
func (k *kafkaSink) releaseEvent() {
	clear(k.vals)
	if cap(k.scratch) > 64<<10 {
		k.scratch = nil
	}
}

// KafkaRecordBytes is the bytes of the Kafka record a Kafka sink writes for {key, value,
// headers} (the engine's Output record), as connector/kafka writes it: a string key or header
// value its bytes, anything else its JSON; the value its JSON, or its bytes when encoded
// (a string a schema registry encoded); a header its name, and 10 bytes of lengths; null
// headers left out. scratch is reused to measure JSON; the grown one is returned.
func KafkaRecordBytes(enc *value.JSONEncoder, scratch []byte, key, val, headers value.Value, encoded bool) (int, []byte) {
	parts, scratch := kafkaRecordParts(enc, scratch, key, val, headers, encoded)
	return parts[0] + parts[1] + parts[2], scratch
}

// kafkaRecordParts is KafkaRecordBytes by part: the key's, the value's and the headers'.
func kafkaRecordParts(enc *value.JSONEncoder, scratch []byte, key, val, headers value.Value, encoded bool) ([3]int, []byte) {
	var parts [3]int
	measure := func(part int, v value.Value, asString bool) {
		if asString && v.Kind() == value.KindString {
			parts[part] += len(v.Str())
			return
		}
		scratch = enc.Append(scratch[:0], v)
		parts[part] += len(scratch)
	}
	if !key.IsNull() {
		measure(0, key, true)
	}
	measure(1, val, encoded)
	if r := headers.Record(); r != nil {
		for i, name := range r.Keys {
			if !r.Values[i].IsNull() {
				parts[2] += len(name) + 10
				measure(2, r.Values[i], true)
			}
		}
	}
	return parts, scratch
}

func newKafkaSink(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*SinkPlan)
	k := &kafkaSink{value: n.evaluator(p.Value), valueField: p.Value.Field, valueSubject: p.ValueSubject}
	if p.Key.Program != nil {
		k.key = n.evaluator(p.Key)
		k.keys = append(k.keys, KafkaKey)
	}
	k.keys = append(k.keys, KafkaValue)
	if p.Headers.Program != nil {
		k.headers = n.evaluator(p.Headers)
		k.keys = append(k.keys, KafkaHeaders)
	}
	k.record, k.vals = value.MakeRecord(k.keys)
	return k, nil
}

func (k *kafkaSink) process(e *Engine, n *node, ev *event, _ string) {
	vals := k.vals[:0]
	if k.key != nil {
		key, err := k.key.eval(ev)
		if err != nil {
			e.fail(n, KafkaKey, err)
			return
		}
		vals = append(vals, key)
	}
	v, err := k.value.eval(ev)
	encoded := false
	if err == nil && k.valueSubject != "" && e.opts.EncodeKafkaValue != nil {
		var b []byte
		if b, err = e.opts.EncodeKafkaValue(k.valueSubject, v); err == nil {
			v, encoded = value.String(string(b)), true
		}
	}
	if err != nil {
		e.fail(n, k.valueField, err)
		return
	}
	vals = append(vals, v)
	if k.headers != nil {
		h, err := k.headers.eval(ev)
		if err == nil && h.Kind() != value.KindRecord && !h.IsNull() {
			err = &expression.RunError{Message: "the headers are " + h.Kind().String() + ", not a record {name: value}"}
		}
		if err != nil {
			e.fail(n, KafkaHeaders, err)
			return
		}
		if h.IsNull() {
			h = value.NewRecord(nil, nil)
		}
		vals = append(vals, h)
	}
	if max := e.opts.MaxKafkaRecordBytes; max > 0 {
		why := ""
		if f := e.opts.KafkaRecordLimit; f != nil {
			if own := f(n.id); own < max {
				max, why = own, " in its topic (the topic's max.message.bytes, less 101 bytes of a batch's header and lengths)"
			}
		}
		key, headers := value.Null(), value.Null()
		if k.key != nil {
			key = vals[0]
		}
		if k.headers != nil {
			headers = vals[len(vals)-1]
		}
		var parts [3]int
		parts, k.scratch = kafkaRecordParts(&k.enc, k.scratch, key, v, headers, encoded)
		if cap(k.scratch) > 1<<20 {
			k.scratch = nil // not kept past one large record
		}
		if size := parts[0] + parts[1] + parts[2]; size > max {
			// At the largest part's field (a hostile round: a key too large was the value's).
			field := k.valueField
			if parts[0] > parts[1] && parts[0] >= parts[2] {
				field = KafkaKey
			} else if parts[2] > parts[1] {
				field = KafkaHeaders
			}
			e.fail(n, field, &expression.RunError{Message: fmt.Sprintf("the Kafka record would be %d bytes (key %d, value %d, headers %d), more than the %d a record may be%s", size, parts[0], parts[1], parts[2], max, why)})
			return
		}
	}
	n.counts.Out++
	if e.opts.Output != nil {
		e.opts.Output(n.id, k.record, ev.time)
	}
}
