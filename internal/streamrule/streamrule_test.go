package streamrule

import "testing"

func TestBytes(t *testing.T) {
	const kib, mib = 1 << 10, 1 << 20
	for _, c := range []struct {
		name string
		cpu  CPU
		want int
	}{
		{"Zen 3 Milan", CPU{AMD: true, Family: 0x19, L2: 512 * kib, L3: 32 * mib}, 16 * mib},
		{"Zen 3 with 16 MiB of L3", CPU{AMD: true, Family: 0x19, L2: 512 * kib, L3: 16 * mib}, 8 * mib},
		{"Zen 4 Genoa", CPU{AMD: true, Family: 0x19, L2: 1 * mib, L3: 32 * mib}, 32 * mib},
		{"Zen 5 Turin", CPU{AMD: true, Family: 0x1a, L2: 1 * mib, L3: 32 * mib}, 32 * mib},
		{"Zen 2, family 0x17", CPU{AMD: true, Family: 0x17, L2: 512 * kib, L3: 16 * mib}, 16 * mib},
		{"not AMD, family 0x19", CPU{Family: 0x19, L2: 512 * kib, L3: 32 * mib}, 32 * mib},
		{"Intel", CPU{Family: 6, L2: 2 * mib, L3: 60 * mib}, 60 * mib},
		{"Zen 3 without an L3 size", CPU{AMD: true, Family: 0x19, L2: 512 * kib}, Fallback},
		{"no caches reported", CPU{}, Fallback},
	} {
		got, why := Bytes(c.cpu)
		if got != c.want || why == "" {
			t.Errorf("%s: Bytes(%+v) = %d, %q; want %d", c.name, c.cpu, got, why, c.want)
		}
	}
}
