//go:build !linux

package api

import "net"

// tcpAcked: only Linux says what a TCP peer acknowledged (tcpinfo_linux.go); elsewhere a
// request's answer is measured by what the kernel took.
func tcpAcked(net.Conn) (int64, bool) { return 0, false }
