# Everyday targets; `make check` runs .ci/run, the full check (see README: Development).
.PHONY: generate test bench vet cross check

generate:
	go generate ./...

test:
	go test ./...

bench:
	go run ./cmd/rmsnormbench

vet:
	GOARCH=amd64 go vet ./...
	GOARCH=arm64 go vet ./...

# Build for every platform family the package promises to compile on, with and without assembly.
CROSS = linux/386 linux/arm linux/arm64 linux/riscv64 linux/ppc64le linux/s390x linux/loong64 \
	js/wasm wasip1/wasm darwin/arm64 windows/amd64
cross:
	@for t in $(CROSS); do \
		echo "build $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} go build ./... || exit 1; \
		GOOS=$${t%/*} GOARCH=$${t#*/} go build -tags purego ./... || exit 1; \
	done

check:
	bash .ci/run
