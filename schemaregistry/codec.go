package schemaregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/scenario-server/scenario-server/internal/jsonschemas"
	"github.com/scenario-server/scenario-server/value"
)

// MaxAvroItems is the most items an Avro array or map of a record may have, and
// MaxAvroBytes the longest Avro string or bytes: hamba/avro allocates an array's items (16
// bytes each, decoded to any) from its count before it reads them, and by default allows
// counts up to 2^48, so a 15-byte record naming 2^40 items ended the process (out of memory).
const (
	MaxAvroItems = 1 << 20
	MaxAvroBytes = 1 << 20
)

// avroAPI decodes and encodes Avro data within MaxAvroItems and MaxAvroBytes; past them the
// data is an error.
var avroAPI = avro.Config{MaxSliceAllocSize: MaxAvroItems, MaxByteSliceSize: MaxAvroBytes}.Freeze()

// decodeAvro decodes data, one value of schema, whole: data that end before the value does,
// or go on after it, are an error (hamba/avro's Unmarshal takes the end of the data for zero
// values, so a cut record decoded as a record of nulls).
//
// The data are scanned first (scanAvro): what holds more than MaxAvroValues values or nests
// deeper than MaxAvroDepth is an error before anything is decoded.
func decodeAvro(schema avro.Schema, data []byte) (any, error) {
	if err := scanAvro(schema, data); err != nil {
		return nil, err
	}
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI)).Reset(data)
	var raw any
	r.ReadVal(schema, &raw)
	switch {
	case errors.Is(r.Error, io.EOF) || errors.Is(r.Error, io.ErrUnexpectedEOF):
		return nil, errAvroEnd
	case r.Error != nil:
		return nil, r.Error
	}
	var one [1]byte
	if r.Read(one[:]); r.Error == nil {
		return nil, errors.New("there are data after the value")
	}
	return raw, nil
}

// IsWireFormat says whether b can be a value in the registry's wire format: a zero magic
// byte and a 4-byte schema id. (A JSON value never starts with a zero byte.)
func IsWireFormat(b []byte) bool { return len(b) >= 5 && b[0] == 0 }

// Decode decodes a record value in the registry's wire format to a JSON value: the payload
// of a JSON Schema (checked against it), or Avro data decoded by its schema (see
// avroJSONSchema for the JSON it gives). Its errors say why the value cannot be decoded.
func (r *Registry) Decode(ctx context.Context, b []byte) ([]byte, error) {
	var h sr.ConfluentHeader
	id, payload, err := h.DecodeID(b)
	if err != nil {
		return nil, fmt.Errorf("not in the schema registry's wire format: %w", err)
	}
	s, err := r.schemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.avro == nil {
		if _, err := s.check(payload); err != nil {
			return nil, fmt.Errorf("schema id %d: the value %w", id, err)
		}
		return payload, nil
	}
	raw, err := decodeAvro(s.avro, payload)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: Avro data: %w", id, err)
	}
	v, err := jsonValue(s.avro, raw, 0)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: Avro data: %w", id, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	return out, nil
}

// check decodes a JSON payload and checks it against the JSON Schema (jsonschemas.Schema.Validate:
// whatever the value, an error of the value).
func (s *schema) check(payload []byte) (any, error) {
	// The engine's bounds first (value.MaxValues, MaxDepth): encoding/json has none, and ten
	// records of 5.6 million {} decoded at once ended the server, again at each restart
	// (found by a hostile re-test).
	var vd value.Decoder
	if err := vd.Check(payload); err != nil {
		return nil, fmt.Errorf("not JSON the engine can decode: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if d.More() {
		return nil, errors.New("not JSON: data after the value")
	}
	if err := s.json.Validate(v); err != nil {
		return nil, fmt.Errorf("does not fit the JSON Schema: %w", jsonschemas.Problems(err))
	}
	return v, nil
}

// InputSchema is the JSON Schema of the values of the latest schema of subject (an Avro
// schema translated, see avroJSONSchema). Its error says why it is not known (the registry
// cannot be reached, no such subject, a schema not supported).
func (r *Registry) InputSchema(ctx context.Context, subject string) ([]byte, error) {
	s, _, err := r.latestSchema(ctx, subject)
	if err != nil {
		return nil, err
	}
	return s.jsonSchema, nil
}

// Reachable looks up the latest schema of subject (cached, or asked now, within ctx and
// Timeout). It returns an UnreachableError when the schema is not known because the registry
// could not be reached (IsUnreachable), and nil otherwise: when it is known, and when the
// registry refused it (no such subject, a schema not supported), which asking again would not
// mend: Encode then says why for each value. A deployment with a Kafka sink encoding values
// waits while it is not nil, rather than making each value an error.
func (r *Registry) Reachable(ctx context.Context, subject string) error {
	if _, _, err := r.latestSchema(ctx, subject); IsUnreachable(err) {
		return err
	}
	return nil
}

// Encode encodes a JSON value against the latest schema of subject in the registry's wire
// format. Its error says why the value does not fit (or the schema is not known).
func (r *Registry) Encode(ctx context.Context, subject string, value []byte) ([]byte, error) {
	s, id, err := r.latestSchema(ctx, subject)
	if err != nil {
		return nil, err
	}
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(nil, id, nil)
	if err != nil {
		return nil, err
	}
	if s.avro == nil {
		if _, err := s.check(value); err != nil {
			return nil, fmt.Errorf("the value %w of subject %q", err, subject)
		}
		return append(b, value...), nil
	}
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	a, err := avroValue(s.avro, v, 0)
	if err != nil {
		return nil, fmt.Errorf("the value does not fit the Avro schema of subject %q: %w", subject, err)
	}
	data, err := avroAPI.Marshal(s.avro, a)
	if err != nil {
		return nil, fmt.Errorf("the value does not fit the Avro schema of subject %q: %w", subject, err)
	}
	return append(b, data...), nil
}
