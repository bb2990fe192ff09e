//go:build linux

// Command bochsinit is PID 1 of the throwaway Linux that .ci/avx512-bochs boots in the Bochs
// emulator: it runs the test binary /rmsnorm.test with the arguments in /args, copies its output
// to the serial port and powers the machine off.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func main() {
	_ = os.MkdirAll("/dev", 0o755)
	_ = syscall.Mount("devtmpfs", "/dev", "devtmpfs", 0, "")
	_ = os.MkdirAll("/tmp", 0o1777)
	out, err := os.OpenFile("/dev/ttyS0", os.O_WRONLY, 0)
	if err != nil {
		out = os.Stdout
	}
	code := run(out)
	fmt.Fprintf(out, "\nBOCHS-EXIT: %d\n", code)
	out.Sync()
	time.Sleep(500 * time.Millisecond) // let the UART drain before the power goes
	syscall.Sync()
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
}

func run(out *os.File) int {
	args, err := os.ReadFile("/args")
	if err != nil {
		fmt.Fprintln(out, "bochsinit:", err)
		return 2
	}
	cmd := exec.Command("/rmsnorm.test", strings.Fields(string(args))...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = []string{"TMPDIR=/tmp", "HOME=/tmp"}
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(out, "bochsinit:", err)
		return 2
	}
	return 0
}
