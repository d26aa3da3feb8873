# The README's two commands are `make demo` and `make test`.
CARGO ?= cargo
HETSCHED = target/release/hetsched

.PHONY: deps build demo test fmt pgo

deps:
	@bash scripts/deps.sh

build: deps
	$(CARGO) build --release --bin hetsched

# A profile-guided build of the same code (target/pgo/release/hetsched), for benchmarks.
pgo: deps
	bash scripts/pgo-build.sh

demo: build
	$(HETSCHED) demo

test: deps
	bash scripts/test.sh

fmt:
	$(CARGO) fmt --all
