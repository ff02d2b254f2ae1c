# One place for the commands CI runs: `make test` here is what .ci/run does there.
PYTHON ?= python3

.PHONY: test rust-test py-test lint install bench presets soak

test: lint rust-test py-test

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items
	$(PYTHON) -m pip install -q "ruff>=0.6"
	$(PYTHON) -m ruff check python benches tools
	$(PYTHON) tools/check_imports.py
	$(PYTHON) tools/check_sizes.py
	# Python's job table and README's option list against the model's table (job.rs).
	$(PYTHON) tools/gen_job_table.py --check
	# The extension's stub (python/ssdlab/_ssdlab.pyi) against the installed build.
	$(PYTHON) -m pip install -q "mypy>=1.18"
	$(PYTHON) -m mypy.stubtest ssdlab._ssdlab

rust-test:
	# The core's unit tests with every step checked (the verify feature: each part's invariants,
	# the FTL whole), then its integration and doc tests on the core as users build it, then the
	# trace and NBD crates'.
	cargo test -p ssdlab-core --features verify --lib
	cargo test -p ssdlab-core --test '*'
	cargo test -p ssdlab-core --doc
	cargo test -p ssdlab-trace -p ssdlab-nbd

py-test:
	$(PYTHON) -m pip install -q "pytest>=7" "pytest-xdist>=3" "hypothesis>=6" "duckdb>=1.2" "scipy>=1.9" six  # six: fio_jsonplus_clat2csv imports it; scipy: ssdlab fit
	# Two workers (most tests wait on subprocesses and servers), then the wall-clock ones alone;
	# the long versions (marked soak) are `make soak`'s.
	$(PYTHON) -m pytest -q -n 2 -m "not wallclock and not soak" python/tests
	$(PYTHON) -m pytest -q -m "wallclock and not soak" python/tests

# The long loops that measure the product rather than gate a change (each has a short version
# in `make test`): the profile-guided install README's first command makes, the closed-loop fit
# through NBD on every controller family, the SIGKILL loop over a hundred restarts, 1,000 power
# cuts of each protection class, the 480GB M500DC's spread. One at a time (the NBD fit reads
# the wall clock); each prints its figures. About 15 minutes on a 2-vCPU VM.
soak:
	SSDLAB_PGO=1 $(PYTHON) -m pip install -q .
	cargo test -q -p ssdlab-core --test spread -- --ignored --nocapture
	SSDLAB_PGO=1 SSDLAB_REQUIRE_TOOLS=1 $(PYTHON) -m pytest -q -s -m soak python/tests

install:
	$(PYTHON) -m pip install .

# Benchmarks: printed figures, never pass/fail.
bench:
	$(PYTHON) benches/bench_sim.py
	cargo run --release -q -p ssdlab-trace --example parse_rate
	$(PYTHON) benches/bench_trace.py
	$(PYTHON) benches/bench_nbd.py
	$(PYTHON) benches/bench_sweep.py
	$(PYTHON) benches/bench_fit.py
	$(PYTHON) benches/bench_review.py
	$(PYTHON) benches/bench_enterprise_consistency.py

presets:
	$(PYTHON) tools/gen_presets.py
