package streamrule

import "testing"

func TestBytes(t *testing.T) {
	const kib, mib = 1 << 10, 1 << 20
	for _, c := range []struct {
		name string
		cpu  CPU
		want int
		pipe bool
		// above is PipeAbove; Ahead holds where Pipe does; Rows sends every call one at a time
		// where above is not 0, and the others of Pipe's CPUs (Zen 3) the fewest and the most rows
		above int
	}{
		{"Zen 3 Milan", CPU{AMD: true, Family: 0x19, L2: 512 * kib, L3: 32 * mib}, 16 * mib, true, 0},
		{"Zen 3 with 16 MiB of L3", CPU{AMD: true, Family: 0x19, L2: 512 * kib, L3: 16 * mib}, 8 * mib, true, 0},
		{"Zen 4 Genoa", CPU{AMD: true, Family: 0x19, L1: 32 * kib, L2: 1 * mib, L3: 32 * mib}, 32 * mib, false, 0},
		{"Zen 5 Turin", CPU{AMD: true, Family: 0x1a, L1: 48 * kib, L2: 1 * mib, L3: 32 * mib}, 32 * mib, false, 0},
		{"Zen 5 without an L1 size", CPU{AMD: true, Family: 0x1a, L1: -1, L2: 1 * mib, L3: 32 * mib}, 32 * mib, false, 0},
		{"Zen 5 without an L3 size", CPU{AMD: true, Family: 0x1a, L2: 1 * mib}, Fallback, false, 0},
		{"family 0x1a, not AMD", CPU{Family: 0x1a, L2: 1 * mib, L3: 32 * mib}, 32 * mib, false, 0},
		{"Zen 2, family 0x17", CPU{AMD: true, Family: 0x17, L2: 512 * kib, L3: 16 * mib}, 16 * mib, false, 0},
		{"not AMD, family 0x19", CPU{Family: 0x19, L2: 512 * kib, L3: 32 * mib}, 32 * mib, false, 0},
		{"Intel", CPU{Intel: true, Family: 6, L2: 2 * mib, L3: 60 * mib}, 60 * mib, false, 0},
		{"Emerald Rapids", CPU{Intel: true, Family: 6, Model: 0xcf, L1: 48 * kib, L2: 2 * mib, L3: 260 * mib}, 8 * mib, true, 4096},
		{"Sapphire Rapids", CPU{Intel: true, Family: 6, Model: 0x8f, L2: 2 * mib, L3: 105 * mib}, 8 * mib, true, 4096},
		{"Emerald Rapids without an L3 size", CPU{Intel: true, Family: 6, Model: 0xcf, L2: 2 * mib}, 8 * mib, true, 4096},
		{"Emerald Rapids without an L2 size", CPU{Intel: true, Family: 6, Model: 0xcf, L3: 260 * mib}, 260 * mib, true, 4096},
		{"Ice Lake server, not measured", CPU{Intel: true, Family: 6, Model: 0x6a, L2: 1280 * kib, L3: 48 * mib}, 48 * mib, false, 0},
		{"model 0xcf, not Intel", CPU{AMD: true, Family: 6, Model: 0xcf, L2: 2 * mib, L3: 32 * mib}, 32 * mib, false, 0},
		{"Zen 3 without an L3 size", CPU{AMD: true, Family: 0x19, L2: 512 * kib}, Fallback, true, 0},
		{"no caches reported", CPU{}, Fallback, false, 0},
	} {
		got, why := Bytes(c.cpu)
		if got != c.want || why == "" {
			t.Errorf("%s: Bytes(%+v) = %d, %q; want %d", c.name, c.cpu, got, why, c.want)
		}
		if p := Pipe(c.cpu); p != c.pipe {
			t.Errorf("%s: Pipe(%+v) = %v; want %v", c.name, c.cpu, p, c.pipe)
		}
		if a := Ahead(c.cpu); a != c.pipe { // the same CPUs: Zen 3, Sapphire Rapids, Emerald Rapids
			t.Errorf("%s: Ahead(%+v) = %v; want %v", c.name, c.cpu, a, c.pipe)
		}
		// Next: rows of 1024-6144 on Zen 5, none (lo > hi) elsewhere.
		wantLo, wantHi := 1, 0
		if c.cpu.AMD && c.cpu.Family == 0x1a {
			wantLo, wantHi = 1024, 6144
		}
		if lo, hi := Next(c.cpu); lo != wantLo || hi != wantHi {
			t.Errorf("%s: Next(%+v) = %d, %d; want %d, %d", c.name, c.cpu, lo, hi, wantLo, wantHi)
		}
		// NextResidual: rows of up to 4096 on Zen 5, none elsewhere.
		if wantLo, wantHi = 1, 0; c.cpu.AMD && c.cpu.Family == 0x1a {
			wantHi = 4096
		}
		if lo, hi := NextResidual(c.cpu); lo != wantLo || hi != wantHi {
			t.Errorf("%s: NextResidual(%+v) = %d, %d; want %d, %d", c.name, c.cpu, lo, hi, wantLo, wantHi)
		}
		// F16Buffer: rows of 2048-4096 on Zen 5, none elsewhere.
		if wantLo, wantHi = 1, 0; c.cpu.AMD && c.cpu.Family == 0x1a {
			wantLo, wantHi = 2048, 4096
		}
		if lo, hi := F16Buffer(c.cpu); lo != wantLo || hi != wantHi {
			t.Errorf("%s: F16Buffer(%+v) = %d, %d; want %d, %d", c.name, c.cpu, lo, hi, wantLo, wantHi)
		}
		if b := BackwardPipe(c.cpu); b != (c.pipe && c.above == 0) { // Zen 3, of Pipe's CPUs
			t.Errorf("%s: BackwardPipe(%+v) = %v; want %v", c.name, c.cpu, b, c.pipe && c.above == 0)
		}
		if a := PipeAbove(c.cpu); a != c.above {
			t.Errorf("%s: PipeAbove(%+v) = %d; want %d", c.name, c.cpu, a, c.above)
		}
		want, wantWide := RowRule{}, RowRule{}
		switch {
		case c.above != 0: // the same CPUs as PipeAbove: Sapphire Rapids, Emerald Rapids
			want, wantWide = RowRule{From: 2}, RowRule{From: 2}
		case c.pipe: // Zen 3, the other CPUs of Pipe
			want = RowRule{Below: 4, From: 64, Long: true, Stream: true}
			wantWide = want
		case c.cpu.AMD && c.cpu.Family == 0x1a: // Zen 5: the rule depends on the kernel
			want, wantWide = RowRule{Below: 4, Stream: true}, RowRule{From: 2, Short: 384, Stream: true}
		}
		wantGroups := 0
		if c.cpu.AMD && c.cpu.Family == 0x1a { // Zen 5
			wantGroups = 128
		}
		if g := LayerGroups(c.cpu); g != wantGroups {
			t.Errorf("%s: LayerGroups(%+v) = %d; want %d", c.name, c.cpu, g, wantGroups)
		}
		if g := LongGroups(c.cpu); g != (wantGroups != 0) { // the same CPUs: Zen 5
			t.Errorf("%s: LongGroups(%+v) = %v; want %v", c.name, c.cpu, g, wantGroups != 0)
		}
		wantF32 := F32Groups{}
		if wantGroups != 0 { // Zen 5: its L1d, and its L2 for rows of 832 and more, where reported
			wantF32 = F32Groups{Bytes: max(c.cpu.L1, 0), WideFrom: 832, WideBytes: max(c.cpu.L2, 0)}
		}
		if g := GroupsF32(c.cpu); g != wantF32 {
			t.Errorf("%s: GroupsF32(%+v) = %+v; want %+v", c.name, c.cpu, g, wantF32)
		}
		wantHW, wantHWWide := HardwareRows{}, HardwareRows{}
		if wantGroups != 0 { // Zen 5: x within 3/4 of the threshold (c.want: the L3, or Fallback), or long rows
			b := c.want / 4 * 3
			wantHW = HardwareRows{From: 12288, Bytes: b, Long: 12288}
			wantHWWide = HardwareRows{From: 8192, Bytes: b, To16: true, Long: 16384, Residual: 4096, ResidualBytes: c.want}
		}
		if h := Hardware(c.cpu, false); h != wantHW {
			t.Errorf("%s: Hardware(%+v, false) = %+v; want %+v", c.name, c.cpu, h, wantHW)
		}
		if h := Hardware(c.cpu, true); h != wantHWWide {
			t.Errorf("%s: Hardware(%+v, true) = %+v; want %+v", c.name, c.cpu, h, wantHWWide)
		}
		if r := Rows(c.cpu, false); r != want {
			t.Errorf("%s: Rows(%+v, false) = %+v; want %+v", c.name, c.cpu, r, want)
		}
		if r := Rows(c.cpu, true); r != wantWide {
			t.Errorf("%s: Rows(%+v, true) = %+v; want %+v", c.name, c.cpu, r, wantWide)
		}
		wantF, wantB := 12*mib, 12*mib
		if c.pipe && c.above == 0 { // Zen 3, of Pipe's CPUs
			wantF, wantB = 16*mib, 6*mib
		}
		if f, b := Workers(c.cpu); f != wantF || b != wantB {
			t.Errorf("%s: Workers(%+v) = %d, %d; want %d, %d", c.name, c.cpu, f, b, wantF, wantB)
		}
	}
}

// TestRowRule holds OneByOne to its definition at the ends of each rule's ranges, for short rows
// (64 and 128, and up to Short), those between (up to 512, never one at a time) and long ones (576
// and more).
func TestRowRule(t *testing.T) {
	type call struct{ n, d int }
	for _, c := range []struct {
		r    RowRule
		one  []call // calls that go one at a time
		keep []call // calls that keep their usual path
	}{
		{RowRule{}, nil, []call{{2, 64}, {3, 128}, {64, 128}, {1 << 20, 64}, {2, 576}, {64, 4096}}},
		{RowRule{From: 2}, []call{{2, 64}, {3, 128}, {4, 128}, {64, 64}, {1 << 20, 128}},
			[]call{{2, 192}, {64, 512}, {2, 576}, {64, 4096}}},
		{RowRule{Below: 4, From: 64, Long: true}, []call{{2, 128}, {3, 64}, {64, 128}, {65, 64}, {1 << 20, 128}, {2, 576}, {4, 1024}, {1000, 4096}},
			[]call{{4, 128}, {5, 64}, {32, 128}, {63, 128}, {2, 192}, {64, 256}, {1 << 20, 512}}},
		{RowRule{Below: 4}, []call{{2, 64}, {3, 128}}, []call{{4, 128}, {64, 128}, {2, 256}, {2, 1024}}},
		{RowRule{From: 2, Short: 384}, []call{{2, 64}, {2, 192}, {4, 384}, {1 << 20, 256}},
			[]call{{2, 448}, {64, 512}, {2, 576}, {64, 4096}}},
		{RowRule{Below: 4, Short: LongAbove}, []call{{3, 64}, {2, 192}, {3, 512}},
			[]call{{4, 128}, {4, 512}, {2, 576}}},
	} {
		for _, x := range c.one {
			if !c.r.OneByOne(x.n, x.d) {
				t.Errorf("%+v.OneByOne(%d, %d) = false, want true", c.r, x.n, x.d)
			}
		}
		for _, x := range c.keep {
			if c.r.OneByOne(x.n, x.d) {
				t.Errorf("%+v.OneByOne(%d, %d) = true, want false", c.r, x.n, x.d)
			}
		}
	}
}

// TestRowRuleStreams holds Streams to its definition: streamed rows of at most Short (ShortMax
// when 0) under Stream, none without it.
func TestRowRuleStreams(t *testing.T) {
	for _, c := range []struct {
		r    RowRule
		d    int
		want bool
	}{
		{RowRule{Stream: true}, 64, true},
		{RowRule{Stream: true}, ShortMax, true},
		{RowRule{Stream: true}, ShortMax + 64, false},
		{RowRule{Stream: true}, 4096, false},
		{RowRule{From: 2, Short: 384, Stream: true}, ShortMax, true},
		{RowRule{From: 2, Short: 384, Stream: true}, 384, true},
		{RowRule{From: 2, Short: 384, Stream: true}, 448, false},
		{RowRule{From: 2, Short: 384}, 256, false},
		{RowRule{Below: 4, From: 64, Long: true}, 64, false},
		{RowRule{}, 128, false},
	} {
		if got := c.r.Streams(c.d); got != c.want {
			t.Errorf("%+v.Streams(%d) = %v, want %v", c.r, c.d, got, c.want)
		}
	}
}

func TestF32GroupsTakes(t *testing.T) {
	const kib, mib = 1 << 10, 1 << 20
	zen5 := F32Groups{Bytes: 48 * kib, WideFrom: 832, WideBytes: 1 * mib}
	for _, c := range []struct {
		r     F32Groups
		d, b  int
		takes bool
	}{
		{zen5, 768, 48 * kib, true},
		{zen5, 768, 48*kib + 1, false},
		{zen5, 831, 64 * kib, false},
		{zen5, 832, 64 * kib, true},
		{zen5, 1024, 1 * mib, true},
		{zen5, 1024, 1*mib + 1, false},
		{F32Groups{Bytes: 48 * kib}, 1024, 64 * kib, false}, // WideFrom 0: no wide bound
		{F32Groups{}, 576, 1, false},
	} {
		if got := c.r.Takes(c.d, c.b); got != c.takes {
			t.Errorf("%+v.Takes(%d, %d) = %v; want %v", c.r, c.d, c.b, got, c.takes)
		}
	}
}

// Takes reads From and Bytes, and Long, whatever the bytes; TakesResidual Residual and
// ResidualBytes alone.
func TestHardwareRowsTakes(t *testing.T) {
	const mib, huge = 1 << 20, 1 << 40
	zen5 := HardwareRows{From: 8192, Bytes: 32 * mib}
	long := HardwareRows{From: 8192, Bytes: 32 * mib, Long: 16384}
	res := HardwareRows{Residual: 4096, ResidualBytes: 32 * mib}
	for _, c := range []struct {
		r        HardwareRows
		residual bool // TakesResidual, not Takes
		d, b     int
		takes    bool
	}{
		{zen5, false, 8192, 16 * mib, true},
		{zen5, false, 8191, 16 * mib, false},
		{zen5, false, 16384, 32 * mib, true},
		{zen5, false, 16384, 32*mib + 1, false},
		{HardwareRows{Bytes: 32 * mib}, false, 8192, 1, false}, // From 0: none
		{HardwareRows{}, false, 8192, 0, false},
		{res, false, 8192, 1, false}, // no From: none
		{res, true, 4096, 32 * mib, true},
		{res, true, 4095, 16 * mib, false},
		{res, true, 8192, 32*mib + 1, false},
		{zen5, true, 8192, 16 * mib, false}, // no Residual: none
		{HardwareRows{ResidualBytes: 32 * mib}, true, 8192, 1, false},
		{long, false, 16384, huge, true},
		{long, false, 32768, huge, true},
		{long, false, 16383, huge, false},
		{long, false, 8192, 16 * mib, true}, // within Bytes, as without Long
		{zen5, false, 1 << 30, huge, false}, // Long 0: none beyond Bytes
		{HardwareRows{Long: 16384}, false, 16384, huge, true},
		{res, false, 16384, huge, false},
		{HardwareRows{}, false, 16384, huge, false},
		{long, true, 16384, 1, false}, // Long is not the residual's: no Residual, none
	} {
		takes, name := c.r.Takes, "Takes"
		if c.residual {
			takes, name = c.r.TakesResidual, "TakesResidual"
		}
		if got := takes(c.d, c.b); got != c.takes {
			t.Errorf("%+v.%s(%d, %d) = %v; want %v", c.r, name, c.d, c.b, got, c.takes)
		}
	}
}
