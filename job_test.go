package rmsnorm

import (
	"reflect"
	"testing"
)

// job.init writes every field so that the compiler can drop the zeroing of a fresh job; that
// needs fields that cover every byte of it, without padding between or after them.
func TestJobHasNoPadding(t *testing.T) {
	typ := reflect.TypeFor[job]()
	var end uintptr
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Offset != end {
			t.Errorf("job.%s starts at byte %d, after padding from byte %d", f.Name, f.Offset, end)
		}
		end = f.Offset + f.Type.Size()
	}
	if end != typ.Size() {
		t.Errorf("job's fields end at byte %d, its size is %d", end, typ.Size())
	}
}
