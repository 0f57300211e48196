//go:build !unix

package file

import "os"

// fileID is nil where files have no device and inode numbers: a file replaced while the
// server is down is then not noticed.
func fileID(os.FileInfo) []byte { return nil }

// nonBlocking: no such open flag here.
const nonBlocking = 0
