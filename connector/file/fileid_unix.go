//go:build unix

package file

import (
	"encoding/binary"
	"os"
	"syscall"
)

// fileID is what tells one file from another that later has its name: its device and inode
// numbers (16 bytes); nil when the system does not say.
func fileID(info os.FileInfo) []byte {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(st.Dev)) // Dev is int32 or uint64, by system
	return binary.BigEndian.AppendUint64(b, uint64(st.Ino))
}

// nonBlocking is the open flag that keeps opening a FIFO from waiting for its other end.
const nonBlocking = syscall.O_NONBLOCK
