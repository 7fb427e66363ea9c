//go:build linux

package resilience

import (
	"io"
	"net"
	"testing"
	"time"
)

// The kernel says how long a TCP socket has received nothing, and how much it received; a
// connection without a socket of its own cannot be asked.
func TestKernelSilence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "hello")
		_, _ = io.Copy(io.Discard, conn) // until the client closes
	}()
	defer func() { <-done }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.ReadFull(conn, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)                                                 // real silence: the kernel counts it in real time
	quiet, received, ok := kernelSilence(&watchedConn{Conn: conn, clock: wallClock{}}) // looked through
	if !ok || received != 5 || quiet < 100*time.Millisecond {
		t.Fatalf("kernelSilence = %v, %d bytes, %v; want at least 100ms, 5 bytes", quiet, received, ok)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, ok := kernelSilence(a); ok {
		t.Fatal("an in-memory pipe has no socket to ask")
	}
}
