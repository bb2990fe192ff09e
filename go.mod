module github.com/gosimd/rmsnorm

go 1.26.0

require github.com/klauspost/cpuid/v2 v2.4.2

require golang.org/x/sys v0.50.0
