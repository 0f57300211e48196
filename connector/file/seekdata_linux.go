package file

import (
	"errors"
	"os"
	"syscall"
)

// seekData is lseek's SEEK_DATA on Linux.
const seekData = 3

// nextData is where f's data go on from pos: pos, or past a hole of a sparse file (its bytes
// are zeros: no line ends there), or end when only a hole is left; pos when the system does
// not say.
func nextData(f *os.File, pos, end int64) int64 {
	next, err := f.Seek(pos, seekData)
	switch {
	case err == nil && next > pos:
		return next
	case errors.Is(err, syscall.ENXIO):
		return max(pos, end)
	}
	return pos
}
