# The README's two commands are `make demo` and `make test`.
CARGO ?= cargo
HETSCHED = target/release/hetsched
# The project's Python environment (scripts/venv.sh, made by `make deps`): the Python
# tests and the SimPy peer of `bench peers` run in it.
VENV_PY = $(CURDIR)/.venv/bin/python

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
	bash scripts/check-standalone.sh
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	PYTHON=$(VENV_PY) $(CARGO) nextest run --workspace --no-fail-fast
	PYTHON=$(VENV_PY) bash scripts/python-test.sh

fmt:
	$(CARGO) fmt --all
