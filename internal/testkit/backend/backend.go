// Package backend starts the real services some tests need — redis-server, PostgreSQL — on
// 127.0.0.1 on a free port, for the test's process alone, and stops them by their process ID.
// It is for the tests of steady's side modules (queue/asynq, queue/river, state/redis).
package backend

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// Require looks up the program a test main needs. When it is missing the tests cannot run:
// under CI (CI=true) that is a failure, elsewhere a skip; either way Require prints why, with
// install, and exits.
func Require(program, install string) string {
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		fmt.Fprintf(os.Stderr, "%s is not installed, and CI=true: these tests must run (%s)\n", program, install)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "skipping these tests: %s is not installed (%s)\n", program, install)
	os.Exit(0)
	return ""
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitTCP waits until addr accepts connections, for at most limit.
func WaitTCP(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not start: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Redis is a redis-server of a test's own.
type Redis struct {
	Addr string
	path string
	port int
	cmd  *exec.Cmd
}

// StartRedis starts redis-server (found by Require) on a free port, without persistence.
func StartRedis() *Redis {
	r := &Redis{path: Require("redis-server", "apt-get install -y redis-server"), port: FreePort()}
	r.Addr = "127.0.0.1:" + strconv.Itoa(r.port)
	r.Start()
	return r
}

// Start starts the server (again, after Stop) on its port.
func (r *Redis) Start() {
	r.cmd = exec.Command(r.path, "--bind", "127.0.0.1", "--port", strconv.Itoa(r.port), "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		panic(err)
	}
	if err := WaitTCP(r.Addr, 10*time.Second); err != nil {
		r.Stop()
		panic(err)
	}
}

// Stop kills the server by its process ID.
func (r *Redis) Stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
