//go:build !linux

package interop

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death signal: the test's
// cleanup still kills the aimock process whenever the test binary ends normally.
func dieWithParent(*exec.Cmd) {}
