package rmsnorm

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Multi-core rows (Norm.Workers). Rows are independent in the forward pass, so any split gives the
// same bits; the backward pass splits on the blocks of the weight gradient (runBackward).
//
// A split costs the start of the goroutines: about 0.2 us when the other cores are busy or have
// just been (the runtime keeps an idle thread spinning for a while), but 6-10 us once they have
// been idle for 10 us or more and their threads sleep in the kernel. So a goroutine takes at least
// workerBytes of rows read and written, which streamrule.Workers sets from cpuid (12 MiB, on Zen 3
// 16 MiB for the forward forms and 6 MiB for Backward; its doc has the measurements).

// workerShare is the least memory of rows (read and written) a goroutine of a split forward call
// and of a split Backward moves.
type workerShare struct{ forward, backward uintptr }

// workerShares makes a workerShare of streamrule.Workers' two sizes.
func workerShares(forward, backward int) workerShare {
	return workerShare{uintptr(forward), uintptr(backward)}
}

// workersFor returns how many goroutines a call moving bytes of rows should use: at most
// workers, at most units, and no more than one per share bytes.
func workersFor(workers int, bytes uintptr, units int, share uintptr) int {
	w := min(workers, units, int(bytes/share))
	return max(w, 1)
}

// forwardParts returns how many goroutines runWorkers gives the validated forward job j with up
// to workers: one per workerBytes.forward of the memory its rows move, x read, dst written (in
// place: read and written back), the residual read and written. (Norm.oneGoroutine relies on this
// count being at most four times x's bytes over the share.)
func (j *job) forwardParts(workers int) int {
	b := j.rowBytes()
	if j.dst == j.x {
		b += j.format.in().size() * uintptr(j.d)
	}
	if j.res != nil {
		b += j.format.in().size() * uintptr(j.d)
	}
	return workersFor(workers, b*uintptr(j.rows), j.rows, workerBytes.forward)
}

// runWorkers runs the validated forward job with kernel k on up to workers goroutines: the rows
// split into contiguous ranges of nearly equal size.
func (j *job) runWorkers(k kernelID, workers int) {
	w := j.forwardParts(workers)
	if w <= 1 {
		j.run()
		return
	}
	c := newSplit(j, k, w)
	c.run(stageRows)
	c.free()
}

// A split call allocates nothing once a few have run. What its goroutines share is a splitCall
// (160 bytes) from splitPool; Backward's partial sums, blocks*d floats, come from accPool; the
// goroutines are started without arguments (see splitQueue), and the runtime reuses the
// descriptors and stacks of goroutines that have returned. A call allocates a splitCall, or a
// buffer of partial sums (a larger one when the pooled buffer is too small), only when a pool has
// none to give: on the first split calls, when more run at once than before, and after garbage
// collections have emptied the pools (sync.Pool keeps its items through one); and the runtime
// allocates a goroutine descriptor when it has no exited one to reuse.

// stage is what the parts of a split call run.
type stage uint8

const (
	stageRows    stage = iota // a forward job: part i runs the rows [rows*i/parts, rows*(i+1)/parts)
	stageBlocks               // a backward job: part i runs its share of the blocks of gradBlock rows
	stageColumns              // after stageBlocks: part i adds its columns of the blocks' partial sums to DW (and DB)
)

// splitCall is what the goroutines of one split call share. Shared, it lives on the heap; it
// comes from splitPool and goes back after the call.
type splitCall struct {
	j      job // the validated job; each part runs a copy on its own stack
	k      kernelID
	parts  int   // goroutines, the calling one included
	blocks int   // stageBlocks, stageColumns: the call's blocks of gradBlock rows
	stage  stage // what the parts run
	// scratchDX (backward without DX): j.dst holds a scratch row of d floats per part.
	scratchDX bool
	next      atomic.Int64 // the last part taken: the caller runs part 0, each goroutine the next
	wg        sync.WaitGroup
}

var splitPool = sync.Pool{New: func() any { return new(splitCall) }}

// splitQueue hands the split calls to the goroutines started for them. A goroutine started with
// arguments (go c.part(i), or a closure) allocates them, so splitWorker takes none and receives
// its call here. A call sends itself once per goroutine it has started, after starting it:
// every goroutine receives one call, not always the one that started it (any call's part is the
// same work), and a send waits only while the goroutines started before it have yet to receive.
var splitQueue = make(chan *splitCall, 64)

// newSplit returns a splitCall for j run by kernel k in parts parts.
func newSplit(j *job, k kernelID, parts int) *splitCall {
	c := splitPool.Get().(*splitCall)
	c.j, c.k, c.parts, c.blocks, c.scratchDX = *j, k, parts, 0, false
	return c
}

// free puts c back into splitPool, without the job: the pool must not keep the caller's rows
// reachable.
func (c *splitCall) free() {
	c.j = job{}
	splitPool.Put(c)
}

// run runs the parts of stage s, part 0 on the calling goroutine and each other on a goroutine of
// its own, and returns when all have returned. Nothing waits for the others if a part panics: the
// parts run jobs validated before the split, whose kernels do not panic.
func (c *splitCall) run(s stage) {
	c.stage = s
	c.next.Store(0)
	c.wg.Add(c.parts - 1)
	for range c.parts - 1 {
		go splitWorker()
		splitQueue <- c
	}
	c.runPart(0)
	c.wg.Wait()
}

// splitWorker runs the next part of the call it receives. It reads nothing of the call after
// Done: the caller may reuse it then.
func splitWorker() {
	c := <-splitQueue
	c.runPart(int(c.next.Add(1)))
	c.wg.Done()
}

// runPart runs part i of c's stage.
func (c *splitCall) runPart(i int) {
	n := c.parts
	switch c.stage {
	case stageRows:
		j := c.j // runRange sets the job's kernel function: each part its own copy
		j.runRange(c.k, j.rows*i/n, j.rows*(i+1)/n)
	case stageBlocks:
		j := c.j
		if c.scratchDX {
			j.dst = unsafe.Add(j.dst, i*j.d*4)
		}
		b0, b1 := c.blocks*i/n, c.blocks*(i+1)/n
		j.runRange(c.k, b0*gradBlock, min(b1*gradBlock, j.rows))
	case stageColumns:
		d := c.j.d
		c0, c1 := d*i/n, d*(i+1)/n
		for _, s := range [2][2]unsafe.Pointer{{c.j.dw, c.j.acc}, {c.j.db, c.j.accB}} {
			if s[0] == nil {
				continue
			}
			p := unsafe.Slice((*float32)(s[1]), c.blocks*d)
			sum := unsafe.Slice((*float32)(s[0]), d)
			for b := range c.blocks {
				addInto(sum[c0:c1], p[b*d+c0:b*d+c1])
			}
		}
	}
}
