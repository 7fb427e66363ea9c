package interop

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the aimock process if the test binary dies without
// running its cleanups (a panic, a -timeout): a stray server would outlive the run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
