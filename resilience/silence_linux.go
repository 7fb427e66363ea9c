//go:build linux

package resilience

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// kernelSilence asks the kernel about the TCP socket under conn: how long ago it last
// received data (tcpi_last_data_recv, in milliseconds of real time) and how many bytes it has
// received in all (tcpi_bytes_received, Linux 4.1 and later; 0 where the kernel does not
// count). ok is false when conn has no socket to ask (a Unix socket, an in-memory pipe, a
// wrapper that exposes no file descriptor) or the kernel refuses.
//
// RawConn.Control holds the descriptor open for the call, so a connection closed meanwhile
// fails here instead of having its descriptor number reused under us.
func kernelSilence(conn net.Conn) (quiet time.Duration, received uint64, ok bool) {
	sc := sysConn(conn)
	if sc == nil {
		return 0, 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil {
		return 0, 0, false
	}
	return time.Duration(info.Last_data_recv) * time.Millisecond, info.Bytes_received, true
}
