//go:build !(linux || darwin || freebsd)

package sqlite

// DiskFree returns -1 (not known) where statfs is not there.
func DiskFree(string) (int64, error) { return -1, nil }
