package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/gosimd/rmsnorm/internal/benchutil"
)

// peersRunner runs bench/peers' command, built once, a shape at a time, so that its lines come
// with the rest of their shape. The peers run in a process of their own since their dependencies
// are kept out of this module.
type peersRunner struct {
	dir string // a temporary directory holding the binary
	bin string
}

// peersHere reports why -peers cannot run from this directory (nil when it can): main checks it
// before anything is printed.
func peersHere() error {
	if _, err := os.Stat("bench/peers/go.mod"); err != nil {
		return fmt.Errorf("-peers needs bench/peers: run from the root of the rmsnorm repository")
	}
	return nil
}

// buildPeers builds bench/peers' command; on amd64 with GOEXPERIMENT=simd, for the archsimd peer.
func buildPeers() (*peersRunner, error) {
	if err := peersHere(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rmsnormbench")
	if err != nil {
		return nil, err
	}
	p := &peersRunner{dir: dir, bin: filepath.Join(dir, "peersbench")}
	if runtime.GOOS == "windows" {
		p.bin += ".exe"
	}
	cmd := exec.Command("go", "build", "-C", "bench/peers", "-o", p.bin, "./cmd/peersbench")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = os.Environ()
	if runtime.GOARCH == "amd64" {
		cmd.Env = append(cmd.Env, "GOEXPERIMENT=simd")
	}
	if err := cmd.Run(); err != nil {
		p.close()
		return nil, fmt.Errorf("building bench/peers: %v", err)
	}
	return p, nil
}

// run times the peers on one shape: the LayerNorm ones with layerNorm.
func (p *peersRunner) run(s benchutil.Shape, dur time.Duration, layerNorm bool) ([]benchutil.Result, error) {
	cmd := exec.Command(p.bin, "-shapes", s.String(), "-duration", dur.String(), "-layernorm="+strconv.FormatBool(layerNorm))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bench/peers: %v", err)
	}
	var rows []benchutil.Result
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("bench/peers output: %v", err)
	}
	return rows, nil
}

func (p *peersRunner) close() { os.RemoveAll(p.dir) }
