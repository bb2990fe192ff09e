//go:build gc && !purego && !noasm

#include "textflag.h"

// func Get() uint32
TEXT ·Get(SB), NOSPLIT, $0-4
	STMXCSR ret+0(FP)
	RET

// func Set(v uint32)
TEXT ·Set(SB), NOSPLIT, $0-4
	LDMXCSR v+0(FP)
	RET
