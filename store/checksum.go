package store

import (
	"fmt"
	"hash/crc32"
)

// castagnoli is the CRC-32C table (the checksum of iSCSI, ext4 and Kafka's record batches).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// StateChecksum is the CRC-32C of a checkpoint's state, as the stores keep it beside the
// state and verify it on read.
func StateChecksum(state []byte) uint32 { return crc32.Checksum(state, castagnoli) }

// VerifyState returns an error wrapping ErrCorrupt unless state's CRC-32C is want.
func VerifyState(deployment, sequence int64, state []byte, want uint32) error {
	if got := StateChecksum(state); got != want {
		return fmt.Errorf("%w: the state of checkpoint %d of deployment %d (%d bytes) has CRC-32C %08x, but %08x was stored with it",
			ErrCorrupt, sequence, deployment, len(state), got, want)
	}
	return nil
}

// CheckPositions returns an error wrapping ErrCorrupt unless every position names a source and
// has a partition and an offset that are not negative.
func CheckPositions(positions []SourcePosition) error {
	for i, p := range positions {
		if p.Source == "" || p.Partition < 0 || p.Offset < 0 {
			return fmt.Errorf("%w: source position %d is {source %q, partition %d, offset %d}: a position names its source and counts from 0",
				ErrCorrupt, i+1, p.Source, p.Partition, p.Offset)
		}
	}
	return nil
}
