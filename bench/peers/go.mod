module github.com/gosimd/rmsnorm/bench/peers

go 1.26.0

replace github.com/gosimd/rmsnorm => ../..

require (
	github.com/gosimd/rmsnorm v0.0.0-00010101000000-000000000000
	github.com/nlpodyssey/spago v1.1.0
	github.com/viterin/vek v0.4.3
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/google/flatbuffers v23.5.26+incompatible // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	golang.org/x/exp v0.0.0-20230817173708-d852ddb80c63 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
