package api

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpAcked is how many bytes c's TCP peer has acknowledged (tcpi_bytes_acked of TCP_INFO,
// Linux 4.1 on), through the wrappers of a TLS connection and of the server's connection
// limit (their NetConn); false when c is not TCP or the kernel does not say.
func tcpAcked(c net.Conn) (int64, bool) {
	for c != nil {
		if tc, ok := c.(*net.TCPConn); ok {
			raw, err := tc.SyscallConn()
			if err != nil {
				return 0, false
			}
			var acked int64
			ok := false
			_ = raw.Control(func(fd uintptr) {
				info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
				if err == nil {
					acked, ok = int64(info.Bytes_acked), true
				}
			})
			return acked, ok
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return 0, false
		}
		c = u.NetConn()
	}
	return 0, false
}
