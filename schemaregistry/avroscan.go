package schemaregistry

import (
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"
)

// MaxAvroValues is the most values one Avro record may hold in all: each record, field
// value, array item and map entry counts one. MaxAvroDepth is how deep they may nest
// (each record field, array item, map value, union branch and named reference is a level,
// as jsonValue counts them).
//
// hamba/avro's own bounds are per array (MaxAvroItems) and per string (MaxAvroBytes); items
// that take no bytes (null, or an empty record) let a few bytes stand for a great many
// values: 4 bytes name 2^20 nulls, so a record of a few kilobytes held 2^30 of them and
// decoding it ran out of memory. Nesting had no bound before decoding either: a 1 MB record
// nested half a million levels deep took 870 MB and 5.7 s to decode before jsonValue refused
// it. scanAvro checks both on the encoded bytes first, allocating nothing.
//
// MaxAvroJSONBytes bounds the JSON a record decodes to, as scanAvro estimates it: what the
// schema writes for each value counts too (a record's field names, an enum's symbol), which
// the bytes read do not bound: 4 KB of Avro naming 2^20 values of an enum whose symbol is
// 100 KB decoded to 400 MB of JSON. MaxAvroDecimalBytes is the longest decimal's two's
// complement (the most digits a decimal may have, MaxAvroPrecision, take 416 bytes); past it
// big.Rat's reduction takes seconds.
const (
	MaxAvroValues       = 1 << 20
	MaxAvroDepth        = 64
	MaxAvroJSONBytes    = 16 << 20
	MaxAvroDecimalBytes = 512
	MaxAvroPrecision    = 1000
)

// errAvroEnd is the error of data that end before the value does.
var errAvroEnd = errors.New("the data end before the value does")

// scanAvro walks data, one value of schema in Avro's binary encoding
// (https://avro.apache.org/docs/1.11.1/specification/#binary-encoding), as hamba/avro
// reads it, without decoding it, and returns an error when the value holds more than
// MaxAvroValues values, nests deeper than MaxAvroDepth, has a count, length or index out of
// range, or ends early. It reads lengths, counts and indices exactly as hamba/avro's Reader
// does (ReadLong, ReadInt), so the decoding that follows walks the same values; it reads
// each byte at most once, in time linear in len(data) and the values it counts.
func scanAvro(schema avro.Schema, data []byte) error {
	s := avroScan{data: data}
	return s.value(schema, 0)
}

type avroScan struct {
	data   []byte
	pos    int
	values int
	json   int // the JSON estimated so far, in bytes
}

// out counts n bytes of JSON.
func (s *avroScan) out(n int) error {
	if s.json += n; s.json > MaxAvroJSONBytes {
		return fmt.Errorf("the data would decode to more than %d bytes of JSON", MaxAvroJSONBytes)
	}
	return nil
}

// long reads a zig-zag varint of at most 10 bytes, as hamba/avro's ReadLong.
func (s *avroScan) long() (int64, error) {
	v, err := s.varint(10)
	return int64(v>>1) ^ -int64(v&1), err
}

// int reads a zig-zag varint of at most 5 bytes, as hamba/avro's ReadInt (the bits past 32
// dropped, as its uint32 shifts drop them).
func (s *avroScan) int() (int32, error) {
	v, err := s.varint(5)
	u := uint32(v)
	return int32(u>>1) ^ -int32(u&1), err
}

// varint reads a varint of at most size bytes, without its zig-zag.
func (s *avroScan) varint(size int) (uint64, error) {
	var v uint64
	for i := range size {
		if s.pos >= len(s.data) {
			return 0, errAvroEnd
		}
		b := s.data[s.pos]
		s.pos++
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("a varint longer than %d bytes", size)
}

// skip passes n bytes.
func (s *avroScan) skip(n int64) error {
	if n > int64(len(s.data)-s.pos) {
		return errAvroEnd
	}
	s.pos += int(n)
	return nil
}

// bytes passes a string or bytes: its length (at most max), then that many bytes.
func (s *avroScan) bytes(max int64) error {
	n, err := s.long()
	switch {
	case err != nil:
		return err
	case n < 0:
		return fmt.Errorf("a string or bytes of length %d", n)
	case n > max:
		return fmt.Errorf("a string or bytes of %d bytes, more than %d", n, max)
	}
	if err := s.out(int(n) + 3); err != nil { // quoted, and a comma
		return err
	}
	return s.skip(n)
}

func (s *avroScan) value(schema avro.Schema, depth int) error {
	if depth > MaxAvroDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxAvroDepth)
	}
	if s.values++; s.values > MaxAvroValues {
		return fmt.Errorf("more than %d values in one record", MaxAvroValues)
	}
	switch sc := schema.(type) {
	case *avro.RefSchema:
		s.values-- // a name, not a value of its own
		return s.value(sc.Schema(), depth+1)
	case *avro.RecordSchema:
		if err := s.out(2); err != nil {
			return err
		}
		for _, f := range sc.Fields() {
			if err := s.out(len(f.Name()) + 4); err != nil { // "name":, and a comma
				return err
			}
			if err := s.value(f.Type(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case *avro.ArraySchema:
		return s.blocks(depth, false, sc.Items())
	case *avro.MapSchema:
		return s.blocks(depth, true, sc.Values())
	case *avro.UnionSchema:
		i, err := s.int()
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(sc.Types()) {
			return fmt.Errorf("union index %d out of range", i)
		}
		if sc.Types()[i].Type() == avro.Null {
			return s.out(5) // a null, at no depth (jsonValue does not go into it either)
		}
		s.values-- // the branch's value is the value
		return s.value(sc.Types()[i], depth+1)
	case *avro.EnumSchema:
		i, err := s.int()
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(sc.Symbols()) {
			return fmt.Errorf("enum index %d out of range", i)
		}
		return s.out(len(sc.Symbols()[i]) + 3)
	case *avro.FixedSchema:
		if err := s.out(sc.Size() + 3); err != nil {
			return err
		}
		return s.skip(int64(sc.Size()))
	case *avro.NullSchema:
		return s.out(5)
	case *avro.PrimitiveSchema:
		if sc.Type() == avro.String || sc.Type() == avro.Bytes {
			if l := sc.Logical(); l != nil && l.Type() == avro.Decimal {
				return s.bytes(MaxAvroDecimalBytes)
			}
			return s.bytes(MaxAvroBytes)
		}
		if err := s.out(25); err != nil { // the longest number, true, false or null, and a comma
			return err
		}
		switch sc.Type() {
		case avro.Null:
			return nil
		case avro.Boolean:
			return s.skip(1)
		case avro.Int:
			_, err := s.int()
			return err
		case avro.Long:
			_, err := s.long()
			return err
		case avro.Float:
			return s.skip(4)
		case avro.Double:
			return s.skip(8)
		}
	}
	return fmt.Errorf("an Avro type %s not supported", schema.Type())
}

// blocks passes an array's or a map's blocks: each a count (negative: then followed by the
// block's size in bytes), then that many items (a map's: a key, then a value), until a
// count of 0.
func (s *avroScan) blocks(depth int, keyed bool, item avro.Schema) error {
	if err := s.out(3); err != nil {
		return err
	}
	items := int64(0)
	for {
		n, err := s.long()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n < 0 {
			if n == -n { // the least int64 has no opposite
				return fmt.Errorf("a block count of %d", n)
			}
			n = -n
			if _, err := s.long(); err != nil {
				return err
			}
		}
		if items += n; items > MaxAvroItems {
			return fmt.Errorf("an array or map of more than %d items", MaxAvroItems)
		}
		for range n {
			if keyed {
				if err := s.bytes(MaxAvroBytes); err != nil {
					return err
				}
			}
			if err := s.value(item, depth+1); err != nil {
				return err
			}
		}
	}
}

// checkAvroDecimals returns an error when a decimal of schema has a precision past
// MaxAvroPrecision: hamba/avro works out 10^scale (scale ≤ precision) for each value it
// decodes (a scale of 10^8: 56 s for a 2-byte value).
func checkAvroDecimals(schema avro.Schema) error {
	seen := map[string]bool{}
	var walk func(avro.Schema) error
	walk = func(sc avro.Schema) error {
		if n, ok := sc.(avro.NamedSchema); ok {
			if seen[n.FullName()] {
				return nil
			}
			seen[n.FullName()] = true
		}
		if l, ok := sc.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
			if d, ok := l.Logical().(*avro.DecimalLogicalSchema); ok && d.Precision() > MaxAvroPrecision {
				return fmt.Errorf("a decimal of precision %d: at most %d", d.Precision(), MaxAvroPrecision)
			}
		}
		switch sc := sc.(type) {
		case *avro.RefSchema:
			return walk(sc.Schema())
		case *avro.RecordSchema:
			for _, f := range sc.Fields() {
				if err := walk(f.Type()); err != nil {
					return err
				}
			}
		case *avro.ArraySchema:
			return walk(sc.Items())
		case *avro.MapSchema:
			return walk(sc.Values())
		case *avro.UnionSchema:
			for _, t := range sc.Types() {
				if err := walk(t); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(schema)
}
