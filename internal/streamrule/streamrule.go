// Package streamrule decides, from what cpuid reports, how the assembly kernels stream a call's
// rows: from what size of rows (read and written) they treat them as coming from memory
// (non-temporal stores out of place, prefetches of the rows ahead), whether the kernels sum the
// next float32 (or float16) row inside the scale pass of the row before (Pipe; PipeAbove for
// RMSNorm's rows, PipeMinTo16 for float32 rows written as float16), which streamed rows they
// leave to the hardware prefetchers (Hardware), whether the backward kernels prefetch 1 KiB ahead
// (Ahead) or their dx pass the next row (Next), and whether their dx loop forms the next row's
// sums (BackwardPipe), whether the scale pass of rows with a residual prefetches the next row of x
// beside that of h (NextResidual), which calls of float32 rows, in cache or streamed, go one row
// at a time through the kernels' one-row path (Rows), which rows the AVX-512 functions take four
// at a time (LayerGroups, LongGroups, GroupsF32), which single float16 rows go through a float32
// copy (F16Buffer), and how much memory a goroutine of a call split by Norm.Workers moves
// (Workers). Each rule's doc holds the measurements per machine behind it. What does not depend
// on the machine is the generator's (asm/amd64/kernel.go and onerow.go, with their
// measurements): the prefetch instruction (PREFETCHT0), how far ahead the loops that prefetch
// within a row reach (aheadBytes, rowsAheadBytes, pipePrefetch), and the width of the
// non-temporal stores (a whole vector of the kernel). The package uses it at init, and the bench
// command prints the streaming threshold (Bytes) and the split's (Workers); nothing else of the
// module needs it.
package streamrule

import "github.com/klauspost/cpuid/v2"

// Fallback is the threshold when cpuid reports no L3, and in builds without assembly (no cpuid).
// Measured on an AMD EPYC (Zen 5, 32 MiB of L3) as Forward followed by copy() of its output, the
// next operation reading y, rows of 4096, streaming forced on against off (ms, best of three):
//
//	x + y      float32 rows           bfloat16 rows
//	 8 MiB     0.35 on, 0.22 off      0.40 on, 0.31 off
//	16 MiB     0.64 on, 0.50 off      0.81 on, 0.82 off
//	32 MiB     1.62 on, 1.71 off      1.62 on, 2.19 off
//	64 MiB     3.54 on, 3.87 off      3.57 on, 4.84 off
//
// Streaming starts to win where the rows fill the L3; on a virtual machine without an L3 size
// (copy() bandwidth dropping past 16-32 MiB), 8 MiB of output streamed took 737 us against 597,
// and from 16 MiB of output (32 MiB of rows) streaming won. So 32 MiB.
const Fallback = 32 << 20

// CPU is what the rule reads of cpuid.
type CPU struct {
	AMD    bool // the vendor is AMD
	Intel  bool // the vendor is Intel
	Family int  // the family, extended family included (0x19 for Zen 3 and Zen 4, 0x1a for Zen 5)
	Model  int  // the model, extended model included (0xcf for Emerald Rapids)
	// Cache sizes in bytes, L1 the data cache's; zero or negative (cpuid's -1) when not reported.
	L1, L2, L3 int
}

// Host is what the rule reads of this machine's cpuid.
func Host() CPU {
	return CPU{
		AMD:    cpuid.CPU.VendorID == cpuid.AMD,
		Intel:  cpuid.CPU.VendorID == cpuid.Intel,
		Family: cpuid.CPU.Family,
		Model:  cpuid.CPU.Model,
		L1:     cpuid.CPU.Cache.L1D,
		L2:     cpuid.CPU.Cache.L2,
		L3:     cpuid.CPU.Cache.L3,
	}
}

// Bytes returns the threshold for c and why it is that:
//
//   - Sapphire Rapids and Emerald Rapids (Intel family 6, models 0x8f and 0xcf) with an L2 size:
//     four times the L2, whatever the L3;
//   - no L3 reported: Fallback;
//   - Zen 3 (AMD family 0x19 with a 512 KiB L2; Zen 4, the same family, has 1 MiB): half the L3;
//   - any other CPU: the L3.
//
// Zen 3 streams from half its L3 because there, unlike on Zen 5, the rows stop staying in the
// cache well before they fill it. Measured on an AMD EPYC 7003 (Zen 3, "Milan", a 2-vCPU virtual
// machine, L2 512 KiB, L3 32 MiB), 2026-12-02, ms, min (median) of five interleaved runs, rows of
// 4096, streaming forced on against off:
//
//	Forward, then copy() of y           Backward (Inv, DW), then copy() of dx
//	x + y     on            off                x + dy + dx   on            off
//	 8 MiB    0.63 (0.71)   0.47 (0.52)       10.5 MiB       0.89 (1.08)   0.89 (1.01)
//	10 MiB    0.84 (0.86)   0.65 (0.68)       13.5 MiB       1.29 (1.54)   1.24 (1.55)
//	12 MiB    0.98 (1.03)   0.78 (0.83)       16.5 MiB       1.92 (2.19)   2.03 (2.34)
//	14 MiB    1.17 (1.19)   1.12 (1.57)       21 MiB         2.53 (2.88)   2.89 (3.53)
//	16 MiB    1.21 (1.49)   1.25 (1.96)       27 MiB         3.36 (3.75)   3.39 (3.99)
//	20 MiB    1.75 (2.24)   2.25 (2.34)       31.5 MiB       4.02 (4.45)   4.12 (4.99)
//	24 MiB    2.07 (2.52)   3.20 (3.37)
//	32 MiB    3.61 (3.65)   4.68 (4.93)       (32 MiB: three runs)
//
// So from 16 MiB on that machine, where Zen 5's table above keeps the rows in cache at 16 MiB.
// Zen 4 has not been measured; it keeps the L3.
//
// The server Xeons of Sapphire Rapids and Emerald Rapids report an L3 of up to 320 MiB, the whole
// socket's, shared by its cores through a mesh and not inclusive of the L2s, so it keeps far less
// of a core's rows than its size says; streaming from the L3 (260 MiB here) would stream nothing
// below 2048x16384. The workstation and smaller parts of model 0x8f (15-105 MiB of L3) take the
// same rule unmeasured.
// Measured on an Intel Xeon (Emerald Rapids, family 6 model 0xcf, a 2-vCPU virtual machine, L2
// 2 MiB, L3 260 MiB), 2026-12-03, Forward then copy() of y, rows of 4096, streaming forced on
// against off alternated in one process, the median of the pairs' time ratios (on/off), with the
// avx512 kernel in two runs and the avx2 one in one:
//
//	x + y     avx512          avx2
//	 2 MiB    1.51, 1.48      1.47
//	 4 MiB    1.10, 1.14      1.06
//	 6 MiB    1.03, 1.05      0.94
//	 8 MiB    1.03, 0.93      0.93
//	10 MiB    0.91, 0.92      0.91
//	12 MiB    0.81, 0.84      0.81
//	16 MiB    0.75, 0.74      0.82
//	32 MiB    0.67
//	64 MiB    0.74
//	256 MiB   0.72
//
// So from 8 MiB, four times the L2. The same machine and way, one run each: ForwardBF16 (x + y
// in bfloat16) 1.28 at 4 MiB, 1.20 at 6, 1.07 and 1.14 at 8, 1.04 at 10, 0.99 and 1.02 at 12,
// 0.97 and 0.96 at 16, 0.84 at 32; Backward (Inv, DW; x + dy + dx, then copy() of dx) 0.96 at
// 4 MiB, 0.87 at 6, 0.79 at 8, 0.70 at 12, 0.67 at 16, 0.64 at 32. One threshold for all: bfloat16
// rows of 8-10 MiB give up 4-14% (even at 12) for float32 rows' 8-19% at 10-12 MiB and the
// backward's 21-30% at 8-12 MiB.
// Sapphire Rapids has the same cores' L2 and the same mesh; other Intel CPUs have not been
// measured and keep the L3.
func Bytes(c CPU) (bytes int, why string) {
	switch {
	case meshXeon(c) && c.L2 > 0:
		return 4 * c.L2, "four times the L2, on Sapphire Rapids and Emerald Rapids"
	case c.L3 <= 0:
		return Fallback, "no L3 size reported"
	case zen3(c):
		return c.L3 / 2, "half the L3, on Zen 3"
	default:
		return c.L3, "the L3"
	}
}

// zen3 reports whether c is an AMD Zen 3: family 0x19 with a 512 KiB L2 (Zen 4, the same family,
// has 1 MiB).
func zen3(c CPU) bool { return c.AMD && c.Family == 0x19 && c.L2 == 512<<10 }

// meshXeon reports whether c is an Intel Xeon of Sapphire Rapids (family 6 model 0x8f) or Emerald
// Rapids (0xcf).
func meshXeon(c CPU) bool { return c.Intel && c.Family == 6 && (c.Model == 0x8f || c.Model == 0xcf) }

// Pipe reports whether the kernels pipe streamed float32 (and, on AVX2, float16) rows on c: the
// loop that scales a row (non-temporal stores) also sums the squares of the next one, loaded from
// memory, so that the next row's loads overlap this row's stores as in a copy, where otherwise the
// next row is prefetched during the scale pass and summed from the cache, memory idle meanwhile.
// The bits are the same either way. On Zen 3 (the AVX2 kernel) and on Sapphire Rapids and Emerald
// Rapids (the AVX-512 one), where it measured faster; the C variant that works this way was the
// fastest in bench-anchors on both, and no faster than prefetching on a Zen 4. Measured on the
// Zen 3 above, Forward with the avx2 kernel, pipe off and on alternated in one process, 25
// pairs of about 15 ms, the median of the pairs' time ratios (on/off) in three runs: 2048x4096
// 0.973, 0.925, 0.936; 16384x4096 0.914, 0.922, 0.931; 1024x8192 0.929, 0.860; 512x8192 (32 MiB,
// which the L3 partly holds from one call to the next) 1.055, 0.913, 1.202, 0.928, 0.983.
// LayerNorm's float32 function (a Norm with Center) pipes too: its scale loop sums the next row's
// elements for the mean. Measured the same way, with weight and bias, 60 pairs, three runs:
// 2048x4096 0.836-0.963, 16384x4096 0.820-0.826, 512x8192 0.802-0.828, 8192x1024 0.858-0.913
// (with the centered pass's prefetch of the row after cut to its first 4 KiB; see pipePrefetch
// in the generator).
//
// The avx2 functions of float16 rows in and out (ForwardF16, ApplyF16; not with RoundNormalized)
// pipe too, at every length the pipe takes: the loop widens the next row's halves as it sums
// them. Measured on the Zen 3 above, Norm.ForwardF16, pipe off and on alternated in one process,
// 40 pairs, the median ratio (on/off), two runs:
//
//	            RMSNorm (weight)   LayerNorm (Center, weight, bias)
//	16384x576   0.93, 0.94         0.94, 0.88
//	8192x1024   0.93, 0.73         0.95, 0.87
//	16384x1024  0.95, 0.96         0.96, 0.95
//	16384x2048  0.85, 0.86         0.97, 0.94
//	8192x3072   0.90, 0.92         0.87, 0.87
//	2048x4096   0.89, 0.83         0.86, 0.86
//	8192x4096   0.80, 0.80         0.81, 0.79
//	16384x4096  0.85, 0.72         0.82, 0.82
//	1024x8192   0.79, 0.82         0.84, 0.84
//
// (On Sapphire Rapids and Emerald Rapids a user who picks the avx2 kernel gets this loop too;
// it was not measured there.)
//
// On Sapphire Rapids and Emerald Rapids the AVX-512 kernel's float32 functions pipe too (the
// AVX2 one's as well, when a user picks it), RMSNorm's only for rows longer than PipeAbove.
// Measured on the Emerald Rapids above, the avx512 kernel, pipe on against off alternated in one
// process, 40 pairs, the median ratio (on/off), two runs each:
//
//	            RMSNorm (Forward)      LayerNorm (Center, weight, bias)
//	8192x1024   0.93, 0.97             1.00, 0.97
//	4096x2048   1.00, 0.97             0.96, 0.97
//	2730x3072   1.01, 1.01             0.91, 0.93
//	2048x4096   1.06, 1.07             0.92, 0.94
//	2048x5120   0.98, 0.99
//	1408x6144   0.97, 0.95             0.84, 0.83
//	512x8192    0.97, 0.92             0.82, 0.81
//	1024x8192   0.93, 0.93
//	16384x4096  1.06, 1.00
//	256x16384   0.90, 0.91             0.80, 0.81
//	128x32768   0.92, 0.91
//
// LayerNorm's rows, which the pass before the scale loop reads a second time from the cache,
// gain from 2048 on and are even at 1024, so they pipe at every length the pipe takes (above 512);
// RMSNorm's lose at 4096 and gain above it (the shorter rows' gains at 1024 are one shape in
// noise).
//
// Zen 5 does not pipe. Measured on an AMD EPYC (Zen 5, a 2-vCPU virtual machine, L1d 48 KiB),
// 2026-12-07, Forward, the pipe forced on (rows above 512) against the rule's paths alternated in
// one process, 25 rounds, min ns per row, two runs (avx512 off -> on; avx2 off -> on):
//
//	            avx512                               avx2
//	512x8192    1007 -> 1338, 1119 -> 1427           989 -> 1035, 1081 -> 1194
//	1024x8192   1353 -> 1489, 1485 -> 1502           1312 -> 1532, 1530 -> 1666
//	256x16384   2612 -> 2811 (one run)               2523 -> 2495
//	2048x4096   520 -> 598, 579 -> 656               521 -> 699, 578 -> 755
//	8192x2048   328 -> 338 (one run)                 346 -> 361
//	16384x4096  983 -> 988, 950 -> 913              964 -> 1056, 917 -> 1004
//
// Only avx512's 16384x4096 gained, by 4% in one run of two.
func Pipe(c CPU) bool { return zen3(c) || meshXeon(c) }

// RowRule says which calls of float32 rows, d a multiple of 64, a kernel normalizes one row
// at a time through its one-row path (flagRows). An in-cache call of n rows (n > 1) of at most
// Short (ShortMax when Short is 0) goes one at a time, instead of in groups of four, when
// n < Below or, with From set, when n >= From; one of rows longer than LongAbove, which no group
// takes, instead of through the general path one at a time, when Long is set. Rows between the
// two always take the groups. Streamed calls (out of place, rows from memory) of rows of at most
// Short (ShortMax when 0) go one at a time too when Stream is set, with the one-row path's
// streaming loop (non-temporal stores, the sum pass prefetching far ahead) instead of the groups.
// The zero RowRule keeps every call on its usual path.
type RowRule struct {
	Below, From int
	// Short, a multiple of 64 from ShortMax to LongAbove, raises the bound of Below, From and
	// Stream; 0 leaves it at ShortMax.
	Short  int
	Long   bool
	Stream bool
}

// ShortMax and LongAbove are the bounds of RowRule's row lengths: the rowsMax and groupMax of the
// kernels (asm/internal/spec's RowsMax and GroupMax), which a test of the package holds them to.
// A rule's Short lies between the two.
const (
	ShortMax  = 128
	LongAbove = 512
)

// OneByOne reports whether a call of n rows of d (n > 1, d a multiple of 64) goes one at a time
// under r.
func (r RowRule) OneByOne(n, d int) bool {
	if d > LongAbove {
		return r.Long
	}
	return d <= r.shortMax() && (n < r.Below || (r.From > 0 && n >= r.From))
}

// shortMax is the longest row Below and From apply to: Short, or ShortMax when Short is 0.
func (r RowRule) shortMax() int {
	if r.Short > 0 {
		return r.Short
	}
	return ShortMax
}

// Streams reports whether a streamed call of rows of d (d a multiple of 64) goes one at a time
// under r.
func (r RowRule) Streams(d int) bool { return r.Stream && d <= r.shortMax() }

// Rows returns the RowRule of c for the avx512 kernel (wide) or the others (the avx2 kernel: on
// CPUs without AVX-512 wide is false). On Sapphire Rapids and Emerald Rapids, whose out-of-order window
// (512 entries) overlaps the scalar steps of consecutive rows on its own, every in-cache call goes
// one at a time (From 2). Measured on the Emerald Rapids above, Forward, groups (rows at most 512 long,
// four at a time) and rows one at a time in binaries run in turn, twice, each alternating the
// avx512 and avx2 kernels in one process, min ns per row:
//
//	          avx512 groups   one at a time   avx2 groups   one at a time
//	4x64      11.6-11.8       9.3             12.8          10.8
//	4x128     15.0            14.8            19.7          18.2
//	8x128     14.3-14.4       13.5            18.2-18.3     16.8
//	32x128    13.6-13.7       12.6            17.4-17.7     15.8
//	256x128   16.5-16.6       14.2-14.3       19.1-19.3     16.0
//	8x256     23.4-23.5       23.7-23.8       29.4          30.8
//	8x512     37.3            43.2-43.3       51.9          58.6-58.9
//
// so rows of 64 and 128 go one at a time there and longer ones stay in groups.
//
// On Zen 3 (the avx2 kernel; Forward, groups and one at a time alternated in one process, min ns
// per row over 15-25 rounds, two to four runs) the groups hide the chain at 4 to 32 rows of 128
// (their window holds 256 entries), and lose below a whole group and in batches that spill
// the 32 KiB L1d, where the one-row path's lighter bookkeeping wins:
//
//	          groups       one at a time   ratio
//	2x128     29.5-36.4    28.8-30.4       0.84-0.99
//	3x128     27.7-27.8    26.1-26.4       0.94-0.95
//	4x128     20.6-20.7    23.4-23.5       1.13-1.14
//	5x128     21.7-22.7    22.8-24.3       1.05-1.07
//	8x128     18.6-18.7    20.8-21.0       1.12-1.13
//	16x128    18.2-18.8    19.6-19.9       1.06-1.08
//	32x128    17.7-19.8    18.9-19.5       0.98-1.08
//	48x128    19.5         18.9-19.1       0.97-0.98
//	64x128    19.4-19.5    18.7-18.9       0.96-0.97
//	256x128   19.3-21.0    18.4-18.9       0.90-0.95
//	4096x128  21.2-23.4    18.9-19.8       0.84-0.89
//	2x64      23.4-24.8    21.9-22.7       0.91-0.94
//	3x64      20.2-20.4    18.6-19.0       0.92-0.93
//	4x64      15.8-17.3    16.9-17.4       1.00-1.07
//	8x64      14.0-15.4    14.2-14.6       0.95-1.03
//	16x64     13.7-14.9    13.2            0.89-0.96
//	32x64     13.4-13.7    12.3-12.5       0.89-0.94
//	64x64     12.4-13.3    12.1-12.2       0.92-0.98
//	128x64    13.7-14.8    11.8-12.2       0.82-0.86
//	4096x64   13.9         11.7-12.0       0.84-0.86
//
// so there calls of fewer than 4 rows or of 64 rows and more go one at a time (Below 4, From 64),
// which leaves the gains of 16 and 32 rows of 64 to keep one rule for both lengths. Rows longer
// than 512, which the general path takes one at a time with the bookkeeping of every form, gain
// 1-6% there through the one-row path (same runs, two to four for each shape):
//
//	            general path   one-row path   ratio
//	2x1024      92.4-92.5      90.6-90.8      0.98
//	8x1024      107.8-108.0    105.7-106.0    0.98
//	256x1024    127.8-131.1    121.7-124.0    0.95
//	1024x1024   132.6-158.9    126.5-155.0    0.94-0.98
//	1024x576    76.2-79.7      72.4-81.5      0.94-1.02
//	1024x768    101.2-112.7    95.2-108.9     0.94-0.97
//	64x2048     258.2-261.5    250.2-253.2    0.97
//	512x2048    280.8-291.2    266.3-278.5    0.95-0.96
//	2x4096      527.0-529.3    519.1-522.1    0.98-0.99
//	4x4096      521.3-525.8    514.7-519.8    0.99
//	128x4096    621.5-693.8    609.4-674.0    0.97-0.98
//	256x4096    667.3-685.2    656.4-670.6    0.98
//
// so on Zen 3 they go one at a time too (Long). On Emerald Rapids such rows were measured at one
// shape only, 16x1024 (avx512 1% and avx2 4-7% faster one at a time; bench/results), too little
// to set Long there; on Sapphire Rapids not at all. Both keep the general path for them.
//
// Streamed on Zen 3 (out of place, x and dst beyond the stream threshold), rows of 64 and 128
// gain one at a time as well, through the loop that writes dst with non-temporal stores and
// prefetches 8 KiB ahead in its sum pass, against the groups' non-temporal stores and their
// prefetch of the rows ahead in the scale pass. The median of the time ratios (one at a time over
// groups) of 41 rounds alternated in one process, for Forward with Stream off and on (two runs,
// one at 262144x64 and 131072x128) and for the avx2 function itself with the flags set by hand
// (three or four runs):
//
//	             Forward       the function
//	65536x64     0.80-0.82     0.66-0.75
//	262144x64    0.88          0.79-0.95
//	32768x128    0.93-0.96     0.80-0.92
//	131072x128   0.89          0.88-0.92
//	16384x256                  0.93-1.02 (seven runs)
//	65536x256                  0.98-1.01
//	8192x512                   0.95-0.99 (seven runs)
//	32768x512                  0.97-1.06
//
// so streamed rows of at most 128 go one at a time there (Stream), and longer ones, no faster
// beyond the spread, keep the groups. In place, where the rows stay in the cache and dst takes
// ordinary stores, the same loop with ordinary stores was not faster in the median (its best
// rounds were, its typical ones up to 1.4x slower), so those keep the groups too.
//
// On Zen 5 (AMD family 0x1a) the rule depends on the kernel (wide: the avx512 one, 512-bit
// vectors). Measured on an AMD EPYC Zen 5 ("Turin", a 2-vCPU virtual machine, L1d 48 KiB),
// 2026-12-05, Forward, groups and one at a time alternated in one process with both kernels, min
// ns per row over 21 rounds (the medians moved alike), two runs of different shapes:
//
//	          avx512 groups   one at a time   avx2 groups   one at a time
//	2x64      10.5            9.2             11.2          10.4
//	3x64      9.6             7.9             10.7          9.0
//	4x64      11.3            7.4             11.3          9.3
//	32x64     7.2             5.9             9.5           8.1
//	4096x64   8.3             6.7             10.3          8.5
//	2x128     14.4            12.7            17.4          15.4
//	3x128     13.1            10.4            16.2          14.4
//	4x128     13.2            10.2            13.2          14.1
//	8x128     12.1            9.3             13.2          13.9
//	64x128    11.6            8.8             13.4          14.3
//	256x128   11.5            8.6             13.2          13.8
//	4096x128  16.4            10.2            14.4          15.5
//	8x1024    69.6            68.1            79.2          79.9
//	256x1024  103.8           103.0           105.6         105.7
//	128x4096  464.9           462.1           477.2         482.0
//
// so there the avx512 kernel takes every in-cache call of rows of 64 and 128 one at a time (From
// 2), and the avx2 kernel calls of fewer than 4 rows (Below 4: its groups win from four rows of
// 128, and it keeps one rule for both lengths); rows longer than 512 keep the general path (Long
// gains 0-2%). Streamed, rows of 64 and 128 go one at a time with both kernels (Stream), as on
// Zen 3: the same runs, 32768x128 avx512 18.7 and 14.8 ns in groups, 14.5 and 12.9 one at a time,
// avx2 20.4 and 16.4 against 19.0 and 14.9; 65536x64 avx512 8.2 against 6.5, avx2 10.0 against
// 7.9.
//
// Rows of 192 to 512 were measured later (the rule above could not send them one at a time: a
// table of v0.2.10 that gave 64x256 and 16x512 as equal timed the groups both ways), the same
// way, 25 rounds, two runs (21 rounds, one run, for 512), min ns per row:
//
//	          avx512 groups   one at a time
//	2x192     19.2, 17.5      16.6, 15.2
//	8x192     21.2, 15.8      18.6, 12.7
//	64x192    15.8, 15.1      14.0, 12.8
//	1024x192  22.0, 22.6      17.2, 18.1
//	2x256     30.6, 19.8      27.5, 17.4
//	4x256     27.4, 17.9      25.9, 14.8
//	64x256    19.3, 18.3      14.8, 14.3
//	1024x256  26.8, 26.1      24.7, 23.7
//	4x320     22.4, 29.1      21.2, 27.0
//	64x320    24.1, 22.9      19.5, 18.2
//	1024x320  30.6, 34.1      28.4, 31.1
//	2x384     26.6, 43.0      25.0, 36.9
//	4x384     23.1, 30.4      22.1, 30.8
//	8x384     21.9, 22.0      21.1, 21.1
//	64x384    25.6, 31.3      21.4, 28.7
//	1024x384  37.8, 42.3      33.8, 34.4
//	3x448     50.2, 47.2      46.6, 44.6
//	4x448     26.8, 34.1      31.3, 43.4
//	8x448     25.5, 24.8      30.1, 29.2
//	16x448    30.2, 34.4      30.7, 45.3
//	4x512     35.0            45.9
//	8x512     33.4            43.5
//	64x512    39.7            50.0
//
// so the avx512 kernel takes rows of up to 384 one at a time too (Short 384; 4x384 is even, the
// other shapes of 192-384 gain 3-30%), and from 448 on, where four rows or more lose up to 30%,
// keeps the groups. The avx2 kernel's one-row loop lost there from four rows on (4x256 20.5 in
// groups against 28.8, 64x256 19.9 against 28.5) and gained 4% at two and three rows of 192
// alone (2x192 22.4 against 21.6), so its rule stays at ShortMax. Streamed (65536 rows out of
// place), the avx512 kernel's rows of 192-384 gain one at a time as well: min (median) ns per
// row over 21 rounds, two runs, groups against one at a time,
//
//	65536x128  16.7 (18.4), 15.8 (17.7)     16.7 (18.1), 15.8 (18.0)  (the same path: 128 took it before)
//	65536x192  34.5 (37.6), 37.0 (43.6)     29.2 (33.5), 29.5 (34.5)
//	65536x256  59.0 (70.7), 39.8 (43.7)     47.8 (58.9), 36.7 (40.7)
//	65536x320  55.6 (71.5), 52.5 (65.1)     49.7 (67.2), 49.5 (61.8)
//	65536x384  66.2 (91.8), 86.4 (96.8)     61.9 (84.2), 80.0 (93.0)
//	65536x448  67.8 (89.6), 73.8 (85.6)     68.5 (90.8), 71.9 (91.3)  (the same path: Short 384)
//
// (with Short 512, 65536x512 measured 92.2 and 80.8 in groups against 98.1 and 90.3), so Short
// bounds the streamed rows too.
//
// Elsewhere (Zen 4 among them) every call keeps its usual path: no other CPU has been measured
// this way.
func Rows(c CPU, wide bool) RowRule {
	switch {
	case meshXeon(c):
		return RowRule{From: 2}
	case zen3(c):
		return RowRule{Below: 4, From: 64, Long: true, Stream: true}
	case zen5(c) && wide:
		return RowRule{From: 2, Short: 384, Stream: true}
	case zen5(c):
		return RowRule{Below: 4, Stream: true}
	}
	return RowRule{}
}

// LayerGroups returns the shortest row that the AVX-512 kernel's Layer functions (LayerNorm, a
// Norm with Center or a Bias) take four at a time on c (FlagGroups), up to 1024 in cache and up
// to LongAbove for rows from memory (the kernels' longGroupMax and groupMax), as the AVX2
// kernel's take every row of at most LongAbove on every CPU: the two reductions and divisions of
// four rows overlap. 0 means never.
//
// Measured on the Zen 5 of Rows, 2026-12-05: LayerNorm (Center, weight and bias) through
// Norm.Apply and its 16-bit forms, the rows alone and in groups alternated in one process, 21
// rounds, the ratio of the min ns per row (groups over alone), three runs of different shapes
// (f32: float32 rows; bf16, f16: 16-bit rows; tobf16, tof16: float32 rows into 16-bit ones):
//
//	           f32          bf16         f16     tobf16             tof16
//	4x64       0.95         0.96                 0.93
//	64x64      0.92, 0.91   0.99, 0.89   1.01    1.06, 1.05, 1.08   1.13
//	4096x64    0.94         0.87         1.02    1.06, 1.09         1.14
//	32768x64                             1.02    1.10               0.96
//	4x128      0.94, 0.94   0.86, 0.83   0.86    0.92, 0.92, 0.92   0.95
//	64x128     0.99, 0.99   0.90, 0.84   0.93    0.97, 0.97, 0.97   0.97
//	4096x128   1.03, 1.02   0.91, 0.85   0.94    0.98, 0.99, 0.98   0.99
//	32768x128  1.02, 0.85   0.91, 0.91   0.92    1.02, 0.92, 1.01   1.08
//	4x256      0.90, 0.89   0.71, 0.82   0.74    0.71, 0.73, 0.73   0.72
//	64x256     1.00, 1.00   0.66, 0.79   0.70    0.69, 0.69, 0.69   0.69
//	1024x256   1.05, 0.94   0.67, 0.75   0.69    0.75, 0.75, 0.75   0.75
//	32768x256  0.86         0.66         0.69    0.73, 0.73         0.75
//	64x320     0.80         0.74         0.69    0.70, 0.71         0.70
//	4x384      0.75         0.68                 0.75
//	64x384     0.80, 0.82   0.67, 0.75   0.70    0.73, 0.72, 0.71   0.72
//	1024x384   0.90         0.69                 0.80
//	4096x384   0.90         0.77         0.72    0.82, 0.82         0.80
//	64x448     0.84, 0.80   0.69, 0.77   0.71    0.77, 0.78, 0.74   0.74
//	64x512     0.95, 0.87   0.73, 0.80   0.76    0.84, 0.84, 0.81   0.84
//	512x512    1.04, 1.09   0.74, 0.81   0.76    0.89, 0.86, 0.88   0.89
//	4096x512   0.99         0.80                 0.93
//
// Rows of 192 and more gain up to 34% in every form (512x512 f32 lost on its best rounds and
// gained in the medians, 79.8 against 85.7 ns); rows of 128 gain up to 17% or stay within 3%
// (one streamed tof16 run 8% slower, its tobf16 runs 1.02, 0.92, 1.01); rows of 64 gain with
// float32 and bfloat16 rows but mostly lose 5-14% where float32 rows go out as 16-bit ones. So
// from 128: one bound for every form, which leaves the gains of rows of 64 to keep the losses
// out.
// Binaries without and with the groups run in turn showed the same (benchstat of Norm.Apply, 8-10
// runs each: 64x384 -16% and -21%, 4x384 -27%, 64x448 -18%, rows of 128 within the noise).
//
// Rows longer than 512, which the AVX2 groups do not take, gain in cache too (BERT-base's 768 and
// BERT-large's 1024 among them), but lose from memory: with the groups allowed up to 1024 both
// ways, one run, 16384x768 1.29 (f32), 1.11 (bf16), 1.19 (tobf16), 8192x1024 1.30, 0.97, 1.11.
// With them in cache only (rows from memory longer than 512 alone), two runs:
//
//	           f32          bf16         tobf16
//	4x576      0.78, 0.79   0.72, 0.72   0.73, 0.73
//	64x576     0.92, 0.90   0.71, 0.71   0.82, 0.80
//	4x768      0.87, 0.80   0.74, 0.74   0.75, 0.78
//	64x768     0.93, 0.91   0.75, 0.75   0.87, 0.83
//	128x768    0.86, 0.92   0.75, 0.75   0.86, 0.83
//	512x768    0.99, 0.99   0.78, 0.78   0.90, 0.88
//	1024x768   0.95, 0.95   0.83, 0.78   0.89, 0.91
//	4x1024     0.80, 0.88   0.87, 0.80   0.81, 0.81
//	64x1024    0.93, 0.94   0.86, 0.83   0.90, 0.90
//	512x1024   0.94, 0.95   0.89, 0.85   0.96, 0.94
//	16384x768  0.93, 1.00   0.98, 0.95   0.97, 0.85  (from memory: the same path both ways)
//	8192x1024  0.99, 0.98   1.05, 1.00   1.01, 0.95  (the same)
//	1x768      1.01, 1.01   1.00, 1.00   1.00, 1.00  (one row: the same)
//
// Longer rows were not measured and go alone.
//
// On other CPUs with AVX-512 (Sapphire Rapids, Emerald Rapids, Zen 4) the groups have not been
// measured, and every row goes alone.
func LayerGroups(c CPU) int {
	if zen5(c) {
		return 128
	}
	return 0
}

// LongGroups reports whether the AVX-512 kernel's RMSNorm functions take 16-bit rows (bfloat16 or
// float16 rows in, or float32 rows written as 16-bit ones) longer than LongAbove four at a time
// on c, up to 1024 (the kernels' longGroupMax) and in cache only (FlagGroups); shorter rows group
// on every CPU. Measured on the Zen 5 of Rows, 2026-12-05, Norm.Apply and its 16-bit forms with
// a weight, the groups allowed by a flag (a scratch build) off and on alternated in one process,
// 21 rounds, the ratio of the min ns per row (groups over alone), one run of each set of shapes:
//
//	           f32    bf16   tobf16   f16    tof16
//	4x576      0.87   0.71   0.68     0.74   0.69
//	64x576     0.93                   0.69   0.77
//	4x768      0.79                   0.74   0.70
//	64x768     0.96   0.73   0.84     0.74   0.81
//	512x768    1.05   0.75   0.89     0.76   0.94
//	4x1024     0.91                   0.79   0.73
//	64x1024    0.92   0.80   0.89     0.84   0.83
//	512x1024   1.01   0.83   0.94     0.85   0.94
//	64x1536    0.96   0.86   0.91     0.88   0.91
//	64x2048    1.11   0.92   0.98
//	256x2048   1.17   0.94   1.01
//	64x3072    1.28   0.93   1.13
//	64x4096    1.18   0.99   1.28
//
// (another run: f32 4x576 0.75, 512x768 1.03, 64x1024 0.90; tobf16 8x2048 1.07). So 16-bit rows
// group up to 1024, the bound LayerNorm's groups have (their rows of 1536 gain too, but float32
// rows written as 16-bit ones stop gaining at 2048 and lose from 3072 on), and float32 rows,
// which gain up to 21% on small batches but lose 1-5% at 512 rows, keep their rows alone. Rows from memory go alone, as LayerNorm's do. The rule as it stands,
// the same way (the 1x768, float32 and 16384x1024 calls take the same path both ways):
//
//	           fwdbf16  bf16   f16    tobf16  tof16   f32
//	1x768      1.00     1.00   1.00   0.99    1.00    1.00
//	4x576      0.70     0.72   0.74   0.71    0.68    1.00
//	64x576     0.68     0.68   0.69   0.81    0.75    1.00
//	4x768      0.73     0.75   0.75   0.75    0.71    1.00
//	64x768     0.73     0.73   0.74   0.88    0.84    1.00
//	512x768    0.76     0.76   0.77   0.92    0.89    0.93
//	64x1024    0.80     0.80   0.84   0.94    0.91    0.99
//	512x1024   0.84     0.83   0.89   0.92    0.95    0.99
//	16384x1024 0.94     0.99   0.98   1.00    1.08    0.99
func LongGroups(c CPU) bool { return zen5(c) }

// F32Groups says which calls of float32 rows longer than LongAbove, up to 1024, the AVX-512
// RMSNorm function takes four at a time (FlagGroups, in cache): a call of rows of d that moves b
// bytes (x and dst together, x alone in place) when b <= Bytes, or when d >= WideFrom (not 0) and
// b <= WideBytes. The zero F32Groups takes none.
type F32Groups struct {
	Bytes, WideFrom, WideBytes int
}

// Takes reports whether a call of rows of d that moves b bytes goes four at a time under r.
func (r F32Groups) Takes(d, b int) bool {
	return b <= r.Bytes || r.WideFrom > 0 && d >= r.WideFrom && b <= r.WideBytes
}

// GroupsF32 returns the F32Groups of c, where LongGroups leaves float32 rows alone: on Zen 5 every
// call within the L1d, and calls of rows of 832 and more within the L2; none elsewhere. Four rows'
// chains of dependent steps (the reductions, the division, the square root) then overlap where
// one row's would wait.
//
// Measured on the Zen 5 of Rows (L1d 48 KiB), 2026-12-06: Forward on the avx512 kernel, the rows
// alone and in groups alternated in one process (a scratch test toggling the bound), 15 rounds,
// the ratio of the min ns per row (groups over alone), runs of different sets of shapes:
//
//	          out of place                    in place
//	4x576     0.58, 0.75, 0.76, 0.76, 0.82    0.75, 0.77
//	8x576     0.73, 0.76                      0.74, 0.75
//	4x768     0.79, 0.79, 0.78, 0.78, 0.80    0.77, 0.87
//	8x768     0.81, 0.79                      0.79, 0.82
//	4x1024    0.90, 0.83, 0.85                0.89, 0.93
//	8x1024    0.82, 0.91                      0.91, 0.94
//	12x768    1.01, 0.87
//	16x768    1.02, 1.03, 0.84, 1.04          0.81, 0.88
//	16x576    0.96, 0.85
//	32x640    0.83, 0.99, 0.97, 0.98, 0.91
//	16x704    1.02, 1.01
//	64x704    1.01, 1.00
//	48x768    1.01, 1.00, 1.01
//	64x768    0.99, 1.01, 1.02, 0.87, 1.01
//	64x1024   0.82, 0.83, 0.82
//	128x768   0.90, 0.92, 0.96, 0.84, 0.92
//	256x768   0.90, 0.88, 1.04
//	512x768   1.04, 1.07, 1.03
//	256x1024  1.01, 1.03, 1.01
//
// Calls whose rows fit the L1d (x and dst up to 48 KiB: 8x768, 6x1024; 16x768 in place) gain
// 6-27% in every run (42% once). Above that the rows of 576-768 gain in some runs (the VM's speed
// moved from run to run: 16x768 alone took 47.3-75.4 ns per row) and lose up to 5% in others, and
// up to 7% at 512 rows; rows of 832-1024 gained 6-18% in the L2 up to 64 rows too (64x832 0.92,
// 0.88; 64x960 0.84, 0.88; 32x1024 0.89, 0.89), 1-7% at 128 and lost 1-3% at 256. So the L1d
// for every length, and then the rows of 832-1024 alone, measured again (three runs, then two):
//
//	16x768    0.89, 1.02, 0.83          16x960    0.94, 0.92, 0.95
//	64x768    1.07, 1.01, 0.98          64x960    0.80, 0.86, 0.90
//	16x832    1.01, 0.91, 0.94          16x1024   0.92, 0.93, 0.94
//	64x832    0.91, 0.86, 0.89          64x1024   0.93, 0.92, 0.85
//	16x896    0.88, 0.83, 0.92          128x1024  0.93, 0.91, 0.96, 0.96, 0.96
//	64x896    0.96, 0.84, 0.83          160x1024  0.98, 0.95
//	128x896   0.86, 0.88, 0.86          256x1024  0.99, 1.08
//	32x896    1.04, 0.86                128x832   0.90, 0.93
//	48x960    0.88, 0.85                128x960   0.94, 0.94
//	192x896   0.96, 0.90                256x960   1.00, 0.99
//
// Rows of 832-1024 gain up to the L2 (1 MiB: 128x1024) in all but two of 58 runs, these and the
// earlier ones (1.01 and 1.04, each beside a gain of 9-14% in another run), and are even beyond
// it; the rows of 768 stay mixed. So the L2 for rows of 832 and more (WideFrom, WideBytes).
func GroupsF32(c CPU) F32Groups {
	if !zen5(c) {
		return F32Groups{}
	}
	return F32Groups{Bytes: max(c.L1, 0), WideFrom: 832, WideBytes: max(c.L2, 0)}
}

// F16Buffer is the range of row lengths, lo <= d <= hi, for which a single float16 row in cache
// (ForwardF16, ApplyF16) takes the AVX-512 row function that keeps a float32 copy of the row on
// its stack (RowF16Buf: each element widened once, not twice), and lo > hi for none: 2048-4096
// on Zen 5 (at most 4096, the copy's size), none elsewhere. On Zen 5 VCVTPH2PS and VCVTPS2PH
// share the two adder-side pipes, about 0.78 cycles each, and the row without the copy converts
// each vector three times. The two functions called straight on one row (a weight of ones),
// alternated in one process (twelve runs, benchstat, 2026-12-07): d = 512 49.5 and 49.7 ns (the
// same), 1024 75.4 -> 71.1 (-5.7%), 1536 106.8 -> 96.3 (-9.8%), 2048 124.9 -> 116.4 (-6.7%),
// 2560 156.6 -> 138.8 (-11.3%), 3072 178.2 -> 160.6 (-9.9%), 3584 203.8 -> 182.3 (-10.6%), 4096
// 225.5 -> 210.8 (-6.5%). ForwardF16 itself (a normal weight), the rule off and on alternated the
// same way: 1024 81.2 -> 82.9 (+2.1%), 1536 109.8 -> 109.4 (the same), 2048 133.8 -> 126.3
// (-5.6%), 4096 242.2 -> 219.9 (-9.2%): from 2048. Not measured elsewhere: Zen 4's L1d (32 KiB)
// does not hold a row of 4096 with its copy and weight (48 KiB), and the Intel cores convert on
// other ports.
func F16Buffer(c CPU) (lo, hi int) {
	if zen5(c) {
		return 2048, 4096
	}
	return 1, 0
}

// zen5 reports whether c is an AMD Zen 5: family 0x1a.
func zen5(c CPU) bool { return c.AMD && c.Family == 0x1a }

// PipeAbove is the row length above which RMSNorm's streamed float32 rows are piped where Pipe
// holds (LayerNorm's are piped at every length the pipe takes): 4096 on Sapphire Rapids and
// Emerald Rapids, where rows of 4096 measured 6-7% slower with it (see Pipe), and 0 elsewhere.
func PipeAbove(c CPU) int {
	if meshXeon(c) {
		return 4096
	}
	return 0
}

// PipeMinTo16 is the row length above which float32 rows into float16 (ApplyToF16, without
// RoundNormalized) are piped too where Pipe holds: the same loop, writing halves. Measured on the
// Zen 3 above, ApplyToF16 with the avx2 kernel, rows of about 48 MiB a call, pipe on against off
// alternated in one process, 40 pairs, the median ratio in two runs: d = 6144 0.84, 0.84; 4096
// 0.86-0.92 (four runs); 3072 0.92, 0.98; 8192 (512 rows) 0.97, 0.98; but 2048 1.08, 1.09, 1.04,
// 1.01 and 1024 1.02, 1.02. So from 2112 (the next multiple of 64) on; 640 measured faster
// (8192 rows: 0.95, 0.95), but one length below the slow ones is not enough to make the rule
// a band, so it goes without the pipe too. LayerNorm's (Center,
// weight and bias) the same way: 4096 0.95, 0.96 (2048 rows) and 0.92, 0.92 (16384); 8192 0.90,
// 0.92; 3072 0.93, 0.99; 2048 1.01, 1.03; 1024 0.88, 0.92. One rule for both: 2048 is slower in
// both, and 1024 gains for LayerNorm alone.
const PipeMinTo16 = 2048

// Ahead reports whether the backward kernels, on rows from memory, prefetch ahead: each sum pass
// the rows it reads, 1 KiB ahead of its loads (FlagAhead), and the dx pass, which works from the
// cache, the next row's x and dy when dx goes out with non-temporal stores (FlagNext, which the
// Go side sets with FlagAhead; out of place: in place and without DX only the sum passes
// prefetch, and those cases were not measured). On Zen 3 the hardware prefetchers alone leave
// memory idle part of the time there.
// The bits are the same either way. Measured on the Zen 3 above, Backward with the avx2 kernel,
// out of place, the functions with the prefetches against those without alternated in one
// process, 40 pairs of calls, the median of the pairs' time ratios (with/without; the function
// against itself gave 0.99-1.03), two runs:
//
//	            Inv             Inv, DW         DW (inv recomputed)
//	2048x4096   0.980, 0.962    0.931, 0.883    0.910, 0.910
//	16384x4096  0.893, 0.870    0.835, 0.841    0.828, 0.845
//	32768x128   0.930, 0.954    0.983, 0.965    0.945, 0.937
//
// The sum passes' prefetches alone gave 0.94-1.07 at 2048x4096 and 0.86-0.92 at 16384x4096; the
// dx pass's alone 0.80-0.98 with DW and 0.96-1.05 without. On Zen 5 the dx pass's prefetch pays
// for rows of 1024-6144 and not for others (see Next); the sum passes' prefetches, 1 KiB ahead,
// measured no faster there on top of it (16384x4096) and 9-11% slower at 8192x1024. Zen 4 has not
// been measured: it keeps its loops.
//
// On Sapphire Rapids and Emerald Rapids the AVX-512 backward kernel's functions prefetch the same
// way (the AVX2 one's too, when a user picks it). Measured on the Emerald Rapids above, Backward
// with Inv and DW, flagAhead on against off alternated in one process, 40 pairs, the median of
// the pairs' ratios (on/off), three runs for avx512 and one for avx2:
//
//	            avx512                 avx2
//	2048x4096   0.918, 0.954, 0.957    0.81
//	16384x4096  0.951, 0.972, 1.000    0.82
//	512x8192    0.954, 0.951, 0.940    0.86
//	32768x128   0.999, 0.963, 0.948    0.95
func Ahead(c CPU) bool { return zen3(c) || meshXeon(c) }

// Next returns the row lengths, lo <= d <= hi in floats, for which the backward kernels' dx pass
// prefetches the next row's x and dy (FlagNext) on c where Ahead does not hold: on Zen 5, rows of
// 1024 to 6144 (4-24 KiB, up to half its 48 KiB L1d); elsewhere none (lo > hi). Zen 5's hardware
// prefetchers follow rows back to back, but a row's sum pass waits on memory without it, as the
// C backward written like the best C forward variant shows, whose dx pass does prefetch: in one
// process, without it, Norm.Backward (avx512, with Inv, without DW) took 1.05-1.23x that C
// kernel's time at 2048x4096 and 1.25-1.28x at 16384x4096. Measured on a
// Zen 5 (family 0x1a, a 2-vCPU VM, L1d 48 KiB, L2 1 MiB, L3 32 MiB), 2026-12-06, Norm.Backward
// with Inv, out of place, the dx pass's prefetch off and on alternated in one process, 7-9 rounds,
// min ns per row (several runs where listed), with DW / without DW:
//
//	avx512  8192x1024    279 -> 282 / 269 -> 266       16384x1024  366 -> 393 / 323 -> 312
//	        16384x1536   884 -> 712 / 761 -> 632       16384x2048  907 -> 757 / 860 -> 719
//	        4096x2048    682-968 -> 615-659 / 615-849 -> 559-699 (four runs)
//	        8192x3072   1849 -> 1520 / 1799 -> 1485    6144x5120  3012 -> 2877 / 2973 -> 2622
//	        2048x4096   1397-1733 -> 1447-1593 / 1342-1415 -> 1262-1414 (four runs; medians 3-24% lower)
//	        16384x4096  2096-2318 -> 1984-2139 / 2078-2240 -> 1803-1976 (five runs)
//	        4096x6144   3279-3516 -> 2977-3177 / 3088-3403 -> 2574-3123 (three runs)
//	        3072x7168   3889-4139 -> 3835-4193 / 3822-4426 -> 3304-3932 (two runs)
//	        512x8192    2801-3195 -> 3075-3502 / 2662-3081 -> 2752-2953 (seven runs)
//	        1024x8192   2994-4089 -> 3426-4174 / 2981-3065 -> 3007-3553 (two runs)
//	        256x16384   6384 -> 7427 / 6043 -> 5985    32768x128  33.4 -> 46.1 / 25.7 -> 38.4
//	avx2    8192x1024    366 -> 330 / 351 -> 322       16384x2048 1302 -> 803 / 1147 -> 752
//	        16384x4096  2312 -> 1889 / 2223 -> 1736    4096x6144  3820 -> 3508 / 3513 -> 2939
//	        512x8192    2926 -> 3208 / 2638 -> 2668
//
// With DW, rows of 8192 and longer lose (their P row and the prefetched next row crowd the L1
// that the dx pass works in; PREFETCHT1 lost less, 3237 and 6714 ns, but still lost); rows of
// 128 lose 38-49% (each row costs as many prefetches as loads); rows of 1024 on avx512 moved
// between 7% slower and 9% faster from run to run (the rule applied, against off: 358 -> 327 with
// DW, 289 -> 265 without) and gain 8-10% on avx2. Rows of 7168 gain without DW alone: the rule
// stops at 6144.
func Next(c CPU) (lo, hi int) {
	if zen5(c) {
		return 1024, 6144
	}
	return 1, 0
}

// NextResidual returns the row lengths, lo <= d <= hi in floats, for which the scale pass of
// streamed float32 rows with a residual, out of place, prefetches the next row of x beside that
// of h (FlagNext on a forward job) on c: on Zen 5, rows of up to 4096; elsewhere none (lo > hi).
// The rows Hardware's Residual takes (avx512, 4096) prefetch neither.
// The sum pass of such a row reads x and h's old value (the residual) from memory, and without
// it the scale pass of the row before brings in the residual's row alone. Measured on the Zen 5
// above, 2026-12-06, alternated in one process, 7-9 rounds, min ns per row, the prefetch off
// and on (every length), Apply with a residual / ApplyToBF16 with one / LayerNorm (Center,
// Weight, Bias) with one:
//
//	avx512  32768x128    27.8 -> 25.8 / 26.7 -> 24.2 / 34.1 -> 31.4
//	        16384x1024    351 -> 310  /  303 -> 250  /  425 -> 321
//	        4096x2048     601 -> 541  /  535 -> 459  /  772 -> 598
//	        2048x4096    1299 -> 1309 / 1055 -> 986  / 1754 -> 1623 (three earlier runs: 1353-1664
//	                     -> 1391-1601, 1167-1580 -> 1239-1361, 2031-2202 -> 1694-1827)
//	        16384x4096   1862 -> 1681 / 1592 -> 1448 / 2453 -> 2311
//	        512x8192     2491-2842 -> 2497-2665 / 2318-2809 -> 2326-2518 / 3176-4558 -> 3242-4042
//	        1024x6144    1912-2492 -> 2123-2445 / 1759-1925 -> 1834-2195 / 2665-3640 -> 2811-3561
//	avx2    32768x128    31.0 -> 28.1 / 40.8 -> 37.5 / 41.6 -> 38.7
//	        16384x1024    346 -> 318  /  325 -> 263  /  455 -> 350
//	        4096x2048     710 -> 629  /  686 -> 527  /  867 -> 690
//	        2048x4096    1370 -> 1299 / 1279 -> 931  / 1731 -> 1633
//	        16384x4096   2000 -> 1819 / 1797 -> 1399 / 2540 -> 2419
//	        512x8192     2551 -> 2382 / 2562 -> 1964 / 3118 -> 3508
//
// On avx512 rows of 6144 and 8192 came out even or slower in the best rounds (four runs of
// 512x8192, three of 1024x6144; a fourth of 2048x4096, on a disturbed VM, left out above); on
// avx2 512x8192 gained on two of the three calls and lost 12% on LayerNorm, in one run. One rule
// serves both kernels: it stops at 4096.
// In place (ordinary stores into x's rows) rows of 4096 and 8192 measured 20-34% slower with it,
// so it is for rows out of place alone. Beside a C kernel that prefetches
// both rows the same way, in one process, Apply with a residual took 1.09-1.14x its time at
// 16384x4096 before and 0.97-0.99x after (2048x4096: 1.00-1.10x, 0.97-1.13x).
func NextResidual(c CPU) (lo, hi int) {
	if zen5(c) {
		return 1, 4096
	}
	return 1, 0
}

// HardwareRows says which streamed calls of float32 rows out of place (RMSNorm's: into float32, the
// function of Forward and Norm.Apply, and with To16 into bfloat16 or float16 too, that of
// ApplyToBF16 and ApplyToF16) are left to the hardware prefetchers: the loop that scales a row with
// non-temporal stores does not prefetch the next row, as it does for every other streamed row
// (flagNT without flagPF). A call of rows of d whose x takes b bytes is left to them when From > 0,
// d >= From and b <= Bytes, or whatever b when Long > 0 and d >= Long (into float32, and into
// 16-bit rows with To16, either way). RMSNorm's float32 rows with a residual, out of place, are
// left to them under Residual and ResidualBytes the same way: the scale pass then prefetches
// neither the next row of the residual nor that of x (flagNext). The zero HardwareRows takes none.
type HardwareRows struct {
	From, Bytes             int
	To16                    bool
	Long                    int
	Residual, ResidualBytes int
}

// Takes reports whether a call of rows of d whose x takes b bytes is left to the hardware under r:
// by From and Bytes, or by Long alone.
func (r HardwareRows) Takes(d, b int) bool {
	return r.From > 0 && d >= r.From && b <= r.Bytes || r.Long > 0 && d >= r.Long
}

// TakesResidual is Takes for a call with a residual.
func (r HardwareRows) TakesResidual(d, b int) bool {
	return r.Residual > 0 && d >= r.Residual && b <= r.ResidualBytes
}

// Hardware returns the HardwareRows of c for the avx512 kernel (wide) or the others: on Zen 5, the
// calls whose x takes at most three quarters of the streaming threshold (Bytes: of the L3, or of
// Fallback where cpuid reports none; the rows stream from the moment x and dst together reach
// it), of rows of 8192 and longer with the avx512 kernel and of 12288 and longer (48 KiB, the
// L1d) with the avx2 one, whose float32 rows into 16-bit ones keep the prefetch (To16: avx512
// alone); none elsewhere. Such a row, the weight and the next row prefetched
// whole are two L1ds or more, x comes back from the L3 from one call to the next, and there the
// prefetches cost more than they bring; from memory they pay, as they do for shorter rows. The
// calls whose x is the whole L3 (1024x8192) measured even, those of three quarters of it
// (768x8192, 512x12288, 384x16384) faster. Rows of 16384 and longer with the avx512 kernel (into
// float32 or 16-bit rows), and of 12288 and longer with the avx2 one (into float32), are left to
// them from memory too (Long), likely because a row of 48 KiB or more prefetched whole into a
// 48 KiB L1d pushes out lines the row's own scale pass is about to read (the VM has no
// performance counters to tell).
//
// Measured on the Zen 5 of Next (L1d 48 KiB, L2 1 MiB, L3 32 MiB, which this VM's cpuid did not
// report: its threshold was Fallback, 32 MiB), 2026-12-06, Forward out of
// place, the next row's prefetch on and off alternated in one process (first a scratch build whose
// loop skipped it under a flag, then the rule's variable toggled), 21-41 rounds, the median of the
// rounds' time ratios (off/on: below 1 leaving the rows to the hardware is faster), runs of
// different sets of shapes. The avx512 kernel, x within the L3:
//
//	512x8192    0.916, 0.924, 0.897, 0.936, 0.992, 0.943, 0.970, 0.957, 0.951, 0.978, 0.975
//	640x8192    0.914, 0.940
//	768x8192    0.969, 0.924, 0.961, 0.987
//	1024x8192   0.922, 1.019, 0.959, 1.032, 0.993, 1.100, 1.110, 0.946, 0.976 (x is the L3)
//	768x9216    0.971
//	640x10240   1.006             768x10240   1.014
//	512x12288   0.878, 0.923, 0.921, 0.964, 0.929, 0.891, 0.951, 0.914, 0.963, 0.905, 0.948
//	256x16384   0.961, 0.973, 0.984, 0.982, 0.986, 0.906, 0.968
//	384x16384   0.889, 0.937, 0.900, 0.886, 0.900, 0.875, 0.950
//	128x32768   0.958, 1.009, 1.029, 0.897
//	1024x7168   1.220, 0.953, 1.088, 0.925, 0.948, 1.035
//	1024x7680   0.970             1024x6656   1.004
//	1024x6144   1.010, 1.021, 1.057, 0.986, 1.054, 1.157, 1.028, 1.034, 1.068
//	1024x4096   1.312             1280x4096   1.273             2048x2048   1.217
//	2048x4096   1.270-1.401 (six runs)        4096x2048   1.356, 1.455
//
// x beyond the L3: 1536x8192 1.064; 2048x8192 1.055, 0.995, 1.104, 1.102; 4096x8192 1.096;
// 1024x12288 1.069; 2048x12288 1.047; 1024x16384 0.967; 512x32768 1.052; 2048x5120 1.221;
// 16384x4096 1.364, 1.353.
// The avx2 kernel, x within the L3: 512x8192 1.021, 1.107; 768x8192 1.099, 1.026; 1024x8192
// 1.028; 640x10240 1.011; 512x12288 0.910, 0.866; 256x16384 0.899, 0.893; 384x16384 0.860,
// 0.929; 128x32768 0.888; and beyond it 2048x8192 1.066.
//
// Long rows beyond three quarters of the threshold, measured again on a Zen 5 (family 26 model
// 2, 2 vCPUs, no L3 reported: Bytes 24 MiB), 2026-12-07, the same way (a scratch test: Bytes
// raised past every call against the rule as it was, 21 rounds in turn, the order rotated; the
// median of the rounds' off/on ratios), runs apart; the VM's medians 10-30% above its best
// rounds:
//
//	            avx512                                       avx2
//	256x32768   0.911, 0.884, 0.938, 0.873, 0.847, 0.867     0.760, 0.844, 0.760
//	512x32768   0.900, 0.902, 0.906, 0.974, 0.925, 1.048     0.870, 0.977
//	768x16384   0.883                                        0.838
//	1024x16384  0.924, 0.898, 0.973, 0.900, 0.921, 0.973     0.881, 0.929
//	2048x16384  0.930, 0.940, 1.041, 0.998, 0.990, 1.024,    0.940, 1.104, 0.893
//	            1.042
//	1024x12288  0.960, 0.922, 0.968, 0.942                   0.837, 0.934
//	2048x12288  0.929, 1.025, 1.047, 0.985                   0.915, 0.864, 0.958
//
// and avx512 at 8192, 1536x8192 1.006, 2048x8192 1.019. The ratios above 1 came in the slower runs
// (512x32768 at 9419 ns a row against 6622-7067 in the others), as did the day before's
// (1024x12288 1.069, 2048x12288 1.047, 1024x16384 0.967, 512x32768 1.052 above). Of this day's 37
// ratios at 16384 and longer, 32 are below 1, and x of 128 MiB (2048x16384) came out even with
// avx512 (median 0.998). So Long is 16384 for avx512 (12288 left as it was) and 12288 for avx2
// (every row its From takes); 8192 keeps its bound. In bench-anchors the same hour, with the rule
// as it was, the best C variant at these shapes prefetched nothing (c_avx512_ntstore) or the row
// two ahead spread over the sum pass (c_avx2_pf2), and ours took 1.11x and 1.18x its time
// (1024x16384), and 1.16x twice (256x32768), in two runs.
//
// Rows into 16-bit ones (avx512, To16) from memory, measured the same way the same day (Bytes
// and ResidualBytes raised against the rule as it was, Norm.ApplyToBF16 and ApplyToF16):
//
//	            tobf16                                       tof16
//	256x32768   0.794, 0.791, 0.795                          0.743, 0.758, 0.820
//	512x32768   0.845, 0.797                                 0.813, 0.794
//	768x16384   0.843                                        0.796
//	1024x16384  0.846, 0.884, 0.954                          0.813, 0.838, 0.805
//	2048x16384  0.971, 0.941, 1.292, 0.873, 0.876            0.919, 0.912, 0.944
//
// (the 1.292 a run whose rounds without the prefetch had a noisy median: their best was 9% under
// the rule's), so Long takes them too. Rows with a residual (Apply, whose bounds are Residual and
// ResidualBytes) came out even or slower without the prefetches (256x32768 0.998, 512x32768
// 1.014, 1024x16384 1.033, 2048x16384 1.019) and keep them.
//
// Float32 rows into 16-bit ones (Norm.ApplyToBF16 and ApplyToF16, x within three quarters of the
// threshold; x and dst together stream from 32 MiB, so 768x8192 is the shortest batch of 8192):
//
//	            avx512 tobf16          avx512 tof16           avx2 tobf16   avx2 tof16
//	768x8192    0.891, 0.873, 0.838    0.913, 0.872           1.183         0.990
//	512x12288   0.839, 0.827, 0.770    0.824, 0.772           1.151         0.839
//	384x16384   0.826, 1.043, 0.782    0.874, 0.734           1.283         0.830
//
// and beyond the bound, avx512: 640x12288 (x 30 MiB) 0.975 and 0.744, 1024x8192 (32 MiB) 1.151
// and 0.958, 2048x8192 1.115 and 1.015, 1024x6144 1.123 and 0.984 (tobf16, tof16); avx2 2048x8192
// 1.276 and 1.085. avx2's rows into bfloat16, which it rounds with integer instructions, lose
// 15-28% without the prefetch, so To16 is avx512's alone. bfloat16 rows in and out (ForwardBF16,
// whose sum pass prefetches two rows ahead under flagPF too) lost 6-47% without both prefetches
// (1024x8192 1.294, 1536x8192 1.254, 768x16384 1.076, 1024x12288 1.057, 4096x4096 1.471) and
// keep them.
//
// The VM's medians sat 10-30% above its best rounds, so single ratios within 5% of 1 say little;
// the rule takes the lengths that gained in nearly every run. Prefetching only the first 8 KiB of
// the next row, or 16 KiB ahead of the loads whatever the row length, measured between the two
// (avx512). In place (ordinary stores into the rows the sum pass brought in) rows of 8192-16384
// measured the same without the prefetch (2048x8192 1.003, 1024x16384 1.014, 2048x12288 0.997)
// and keep it. The backward's dx pass lost with the next row prefetched at 8192 and longer too
// (see Next). LayerNorm's rows (Center, weight and bias; their centered pass prefetches the next
// row under flagPF too) measured even without both prefetches at the same lengths (one run:
// 768x8192 0.993, 512x12288 0.985, 384x16384 1.036, 256x16384 1.012) and keep them.
//
// Rows with a residual (Apply with Rows.Residual, float32, out of place) are left to the hardware
// on Zen 5 from 4096 on, with the avx512 kernel, while x takes at most the streaming threshold (a
// whole Bytes, not three quarters): their scale pass prefetches neither the next row of the
// residual (flagPF) nor that of x (flagNext, NextResidual). Their sum pass reads two rows from
// memory, x and the residual, and writes h back into the residual, whose lines it has just read;
// presumably from 4096 on the hardware prefetchers keep up within a row, and the two next rows
// prefetched (16 KiB each at 4096) crowd the L1d that holds this row's h and the weight (the VM
// has no performance counters to tell). Measured on the
// same Zen 5, 2026-12-07, Apply with a residual, the prefetches on and off alternated in one
// process (a scratch test: 15 rounds of four calls each, the order rotated, x and the residual
// the same buffers from call to call; in the first run of 2048x4096, 512x8192, 16384x4096 and
// 8192x1024, x was copied into the residual before each round), min ns per row, on -> off, runs
// apart:
//
//	             avx512                                  avx2
//	1024x4096    980 -> 939, 1088 -> 989                 918 -> 962, 1017 -> 1006
//	1536x4096    1076 -> 1045, 1117 -> 1054              1087 -> 1073, 1080 -> 1074
//	2048x4096    1349 -> 1169, 1220 -> 1135,             1300 -> 1211, 1218 -> 1167,
//	             1289 -> 1108, 1396 -> 1133,             1257 -> 1110, 1378 -> 1218,
//	             1241 -> 1060                            1203 -> 1115
//	512x8192     2123 -> 1842, 2071 -> 1780              2048 -> 1801, 2081 -> 1749
//	768x8192     2384 -> 2047, 2516 -> 2199              2341 -> 2098, 2503 -> 2226
//	1024x8192    2493 -> 2209, 2315 -> 2056              2452 -> 2219, 2388 -> 2113
//	256x16384    4569 -> 4173, 4548 -> 4217              4812 -> 4009, 4622 -> 4107
//	512x16384    4704 -> 4229                            4761 -> 4083
//
// Forward on the same rows in the same runs took 582-585 ns at 2048x4096: the residual went from
// 2.1-2.4x that to 1.8-2.0x (issue 25 asks at most 2.1x). Beyond the threshold the runs split
// (3072x4096 1355 -> 1280, 4096x4096 1293 -> 1120 and 1400 -> 1434, 6144x4096 1404 -> 1339), and
// from 8192x4096 the prefetches pay: 1399 -> 1445 and 1537 -> 1704, 16384x4096 1477 -> 1599 and
// 1497 -> 1620 (avx2 1430 -> 1639, 1444 -> 1676). Shorter rows lose without them: 8192x1024 308 ->
// 338 (avx2 306 -> 365; 313 -> 292 and 313 -> 339 in the first run), 4096x2048 541 -> 609 (549 ->
// 636). A C model in the same hour (gcc 12.2.0 -O2, AVX-512 intrinsics; pass 1 h = x + r stored
// back to r, pass 2 y non-temporal) agreed at 2048x4096: with T0 prefetches of the next rows of x
// and r 1366-1481 ns, with T1 1410-1494, without 1185-1231; storing h in pass 2 instead,
// non-temporal, recomputed from x and r, was no faster (1456-1626,
// bench/results/amd-zen5-turin.txt). The bench command (-kernels avx512, its residual section, 500
// ms, the builds before and after in turn) agreed at 2048x4096: 1434.7 -> 1097.1, 1302.9 -> 1074.3,
// 1291.4 -> 1219.1 (Forward 553-599 in the same runs); 512x8192 2421.9 -> 1814.9, 2119.1 -> 1791.1,
// 2171.7 -> 1763.9; 16384x4096, which keeps its prefetches, 1868.0 -> 1514.3, 1508.5 -> 1503.3,
// 1510.9 -> 1564.6. BenchmarkResidual (fused, 2048x4096, the test binaries in turn, 16 runs) 3.625
// -> 3.345 ms (p=0.056). With the avx2 kernel the bench command split (2048x4096 1327.8 -> 1419.3,
// 1236.3 -> 1596.7, 1563.7 -> 1244.5, 1348.0 -> 1306.8, 1304.8 -> 1202.9) and BenchmarkResidual saw
// no change (3.110 -> 3.050 ms, p=0.49), so avx2 keeps its prefetches. Rows into 16-bit ones or of
// 16 bits with a residual, and rows in place, were not measured and keep them too.
func Hardware(c CPU, wide bool) HardwareRows {
	if !zen5(c) {
		return HardwareRows{}
	}
	all, _ := Bytes(c)
	b := all / 4 * 3
	if wide {
		return HardwareRows{From: 8192, Bytes: b, To16: true, Long: 16384, Residual: 4096, ResidualBytes: all}
	}
	return HardwareRows{From: 12288, Bytes: b, Long: 12288}
}

// BackwardPipe reports whether the AVX2 backward kernel pipes streamed rows on c (FlagPipe on a
// backward job: RMSNorm's functions, d a multiple of 64, dx rows 32-byte aligned; dx out with
// non-temporal stores for d above BackwardPipeAbove, or in place, ordinary stores into dy, for d
// above BackwardPipeInPlaceAbove): the loop that writes a row's dx also forms the next row's two
// sums (its squares and g*x), loaded from memory, and that row skips both sum passes. Without it
// a row's x comes from memory in its first pass, its dy in the second, and both again from the
// cache in the dx pass, memory idle while the row is worked from the cache. The bits are the
// same either way.
//
// Measured on the Zen 3 above (2026-12-04), Norm.Backward with the avx2 kernel, the pipe on
// against off alternated in one process, 41 pairs of calls, the median of the pairs' time ratios
// (on/off), two runs where there are two; in place, dy was copied back before each call, out of
// the time:
//
//	out of place  Inv, DW        Inv            DW (inv recomputed)
//	2048x4096     0.756, 0.784   0.729, 0.682   0.706, 0.729
//	16384x4096    0.797, 0.842   0.785, 0.815   0.846, 0.830
//	512x8192      0.795, 0.751   0.682, 0.692   0.737, 0.767
//	8192x1024     0.931, 0.958   0.870, 0.939   0.895, 0.926
//	32768x512     0.984          0.997          0.997
//	65536x256     0.994          0.973          0.975
//	32768x128     0.979          0.920          1.045
//
//	in place      Inv, DW        Inv            DW (inv recomputed)
//	2048x4096     0.608, 0.691   0.604, 0.614   0.646
//	16384x4096    0.752, 0.747   0.610, 0.745   0.756
//	8192x1024     0.719, 0.713   0.689, 0.726   0.709
//	32768x512     0.892, 0.818   0.881, 0.838   0.819
//	65536x256     0.966, 0.947   0.926, 0.917   0.978
//	32768x128     0.903, 0.969   0.950, 0.988   1.069
//
// Out of place, rows of 512 and shorter gain nothing (BackwardPipeAbove); in place rows of 256
// and 512 gain, those of 128 do not (BackwardPipeInPlaceAbove). The loop prefetches the next
// row 1 KiB ahead of its loads: without that prefetch 2048x4096 gave 0.80-0.87 and 8192x1024
// 1.01 (out of place); 2 KiB ahead measured as 1 KiB within noise. In the loop the next row's
// loads come before this row's stores of the same elements: the other way round, where a load
// follows a store 16 KiB (a row) before it at the same offset within the page, the pipe measured
// 1.08-1.36 (slower). Zen 3 only: it picks the AVX2 kernel, and the pipe was measured there alone;
// other CPUs keep their loops.
func BackwardPipe(c CPU) bool { return zen3(c) }

// BackwardPipeAbove is the row length above which BackwardPipe's rows take the pipe out of place
// (dx with non-temporal stores), and BackwardPipeInPlaceAbove the one in place.
const (
	BackwardPipeAbove        = 512
	BackwardPipeInPlaceAbove = 128
)

// Workers returns how much memory of rows (read and written) one goroutine of a call split by
// Norm.Workers moves at least: forward for the forward forms, backward for Backward; a call takes
// one goroutine per that much. Waking a goroutine costs about 0.2 us when the other cores are busy
// or have just been, and 6-10 us once their threads sleep; what a second core gives depends on
// the caches. Zen 3 splits its forward calls from 16 MiB and its backward calls from 6 MiB a
// goroutine; every other CPU from 12 MiB, as measured on a Zen 5.
//
// Measured on an AMD EPYC Zen 5 (a 2-vCPU virtual machine, 32 MiB of L3), BenchmarkWorkers, a
// two-way split forced against one goroutine, the speed of the split (rows x 4096, float32):
//
//	rows    forward   backward (Inv, DW)
//	64      0.87x     0.84x
//	256     0.91x     0.96x
//	512     0.99x     1.53x
//	1024    1.34x     1.90x
//	2048    1.30x     1.42x
//	16384   1.25x     1.18x
//
// So 12 MiB: a backward of 256 rows (12 MiB of x, dy and dx) stays on one goroutine, one of 512
// splits; a forward of 512 rows (16 MiB of x and y) stays, one of 1024 splits. On the Zen 3 of
// Bytes, 2026-12-05, the split against one goroutine alternated in one process, 41 pairs of ten
// calls, the median ratio of the times (split over one; below 1 the split is faster):
//
//	rows    forward          backward
//	128     1.07 (4 MiB)     1.09 (6 MiB)
//	192     1.10             0.96 (9 MiB)
//	256     1.09             0.84 (12 MiB)
//	320     1.04             0.79
//	384     0.98             0.75
//	512     1.05, 1.05       0.69
//	768     1.03 (24 MiB)
//	1024    0.75 (32 MiB)
//	1536    0.86
//	2048    0.79
//
// There the backward gains from 9-12 MiB, and the forward only once the rows stream (from 16 MiB,
// half the L3): a forward of 768 rows, which 12 MiB would split, was 3% slower split.
func Workers(c CPU) (forward, backward int) {
	if zen3(c) {
		return 16 << 20, 6 << 20
	}
	return 12 << 20, 12 << 20
}
