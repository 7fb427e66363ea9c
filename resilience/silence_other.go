//go:build !linux

package resilience

import (
	"net"
	"time"
)

// kernelSilence is Linux's alone (TCP_INFO's tcpi_last_data_recv and tcpi_bytes_received):
// elsewhere the kernel is not asked, and a stream's silence is measured by the pipeline's
// watched connections or, failing those, per Read (see wire.go).
func kernelSilence(net.Conn) (quiet time.Duration, received uint64, ok bool) { return 0, 0, false }
