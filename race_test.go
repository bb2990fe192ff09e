//go:build race

package rmsnorm

func init() { raceEnabled = true }
