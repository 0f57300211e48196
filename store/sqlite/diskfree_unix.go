//go:build linux || darwin || freebsd

package sqlite

import "syscall"

// DiskFree returns the bytes the file system of dir has free for an unprivileged writer
// (statfs's available blocks), or an error.
func DiskFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
