# Two commands matter: `make run` and `make test`. Both install missing Debian packages first.
BUILD ?= build
DATA ?= ./data
LISTEN ?= 127.0.0.1:9000
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 10
# CTest entries at once in the normal and ASan passes: one more than the cores, at most 8. Most
# entries wait on servers, sockets and timeouts (the 2-core VM sat 34-52% idle at -j 2), and
# the files that assert time bounds run alone whatever this is (RUN_SERIAL, tests/CMakeLists.txt).
TEST_JOBS ?= $(shell n=$$(nproc); j=$$((n + 1)); [ $$j -gt 8 ] && j=8; echo $$j)

.PHONY: all deps build run test test-unit test-asan test-fuzz bench clean wheel format format-check size-check typecheck tidy test-tsan test-tsan-ci thread-safety doc-check install deb

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake --preset default >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# dist/wharf-<version>-py3-none-linux_<arch>.whl: the Python package with libwharf and the
# libraries it needs that a stock Debian 12 or Ubuntu 24.04 may lack (scripts/build_wheel.py
# says which and why). Offline: nothing is downloaded. pip install --no-index dist/*.whl
wheel: build
	@/usr/bin/python3 scripts/build_wheel.py --build $(BUILD) --out dist

# PREFIX (default /usr/local) and DESTDIR: wharfd, wharf, libwharf (soname links), wharf.h,
# wharf.pc, etc/wharf/*.conf, systemd units, sysusers.d/tmpfiles.d, man pages
# (docs/operations.md, "Install"; tests/ops/test_install.py).
PREFIX ?= /usr/local
install: build
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

# dist/*.deb: wharfd, libwharf0, libwharf-dev, wharf-cli, built offline by dpkg-buildpackage
# from a copy of the tracked tree (scripts/build_deb.sh; docs/operations.md, "Package").
deb: deps
	@bash scripts/build_deb.sh dist

run: build
	@bash scripts/run.sh $(BUILD) $(DATA) $(LISTEN)

# Every test: unit + functional (real wharfd, aws, boto3, s3cmd, rclone, libwharf, Python),
# then the same under ASan+UBSan, then each libFuzzer driver for a bounded time.
test: build
	@echo "make test: normal pass from $$(date +%T)"
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)
	@echo "make test: ASan pass from $$(date +%T)"
	$(MAKE) test-asan
	@echo "make test: TSan pass from $$(date +%T)"
	$(MAKE) test-tsan-ci
	@echo "make test: fuzz pass from $$(date +%T)"
	$(MAKE) test-fuzz
	@echo "make test: done at $$(date +%T)"

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -R '^unit/'

# Under ASan: the unit tests, the soak and the functional files that drive wharfd's and
# libwharf's C paths. Left out there (they run in the normal pass): files that test other
# programs (aws, rclone, s3cmd, the Python package), files that drive libwharf through Python's
# ctypes (an ASan libwharf cannot load into Debian's Python: "ASan runtime does not come first"),
# and files whose assertions are time bounds or latencies, which ASan's slowdown would make
# fail for no memory fault.
ASAN_SKIP = ^(python/.*|ops/.*|func/(awscli|rclone|s3cmd|hardening_conns|rdma_stall|durability|cluster_faults|cluster_repair|cluster_limits|cluster_rdma|cluster_integrity|cluster_gateways|cluster_slow|part_etag))$$

test-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  ctest --output-on-failure -j $(TEST_JOBS) -E '$(ASAN_SKIP)'

# Under ThreadSanitizer: the same selection as ASan (unit tests, soak, the functional files
# that drive wharfd's and libwharf's C paths; a TSan libwharf cannot load into Python either),
# with the reports that are known and benign suppressed in tests/tsan.supp, one reason each.
# A report makes the program exit 66 (wharfd too, which its test fixture then fails on).
# Not in `make test`: its first full run took 30 minutes on the 2-core VM (under other suites'
# load; 6 of 64 entries failed on start timeouts, fork and time bounds, since addressed), which
# would take make test from 19 to about 50 minutes.
# die_after_fork=0: unit/server/test_rdma forks a peer from a threaded process, and the peer
# starts libfabric's threads, which TSan otherwise refuses ("not supported. Dying").
# Also left out: unit/xfer/test_ofi, whose stalled-peer cases assert 1.5 s transfer timeouts
# that TSan's slowdown (progress gaps of 10 s measured) turns into failures for no race.
TSAN_SKIP = ^(python/.*|ops/.*|unit/xfer/test_ofi|func/(awscli|rclone|s3cmd|hardening_conns|rdma_stall|durability|cluster_faults|cluster_repair|cluster_limits|cluster_rdma|cluster_gateways|cluster_slow|part_etag))$$

test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=suppressions=$(CURDIR)/tests/tsan.supp:second_deadlock_stack=1:exitcode=66:die_after_fork=0 \
	  WHARF_TEST_START_SCALE=6 ctest --output-on-failure -j 2 -E '$(TSAN_SKIP)'

# In make test: ThreadSanitizer over every unit test (store, engine, cluster, client, xfer:
# the copy threads, pools, group commit and membership) and the functional files that drive
# the server's threads hardest (the RDMA engine's copy threads and striped PUTs, a cluster's
# heartbeats, scrubber, repair and pushes), about 5 minutes of the 2-core VM with the build.
# Its first run in make test found three races, each a thread started before the state it
# reads was written (the S3 app after the HTTP daemons; the scrubber after the heartbeat and
# the storage server's HTTP daemon). make test-tsan runs the whole selection.
TSAN_CI = ^(unit/.*|func/(server_rdma|cluster|cluster_push|rdma_put_stripe))$$

test-tsan-ci: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=suppressions=$(CURDIR)/tests/tsan.supp:second_deadlock_stack=1:exitcode=66:die_after_fork=0 \
	  WHARF_TEST_START_SCALE=6 ctest --output-on-failure -j 2 -R '$(TSAN_CI)' -E '$(TSAN_SKIP)'

test-fuzz: deps
	@cmake --preset fuzz -DFUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_all
	cd build-fuzz && ctest --output-on-failure -j $(JOBS) -R '^fuzz/'

# clang-format 14 (pinned: another major formats differently and fails clearly) over src/
# include/ tests/ fuzz/ bench/ *.c *.h, or over FILES="a.c b.h". format-check changes nothing.
format-check: deps
	@bash scripts/format.sh check $(FILES)

# No source file under src/, python/wharf/, fuzz/ or bench/ over 800 lines (seconds).
size-check:
	@bash scripts/check_file_size.sh

# mypy --strict over python/wharf (seconds); the config (python/pyproject.toml [tool.mypy])
# skips only the imports of optional third-party packages.
typecheck:
	/usr/bin/python3 -m mypy --config-file python/pyproject.toml python/wharf

format: deps
	@bash scripts/format.sh fix $(FILES)

# The documentation's checks (seconds): no file reads like a diary, README.md is at most
# 150 lines, every relative link in a Markdown file resolves (tests/docs tests the checks).
doc-check:
	@bash scripts/check_worklog.sh
	@bash scripts/check_readme.sh
	@bash scripts/check_spdx.sh
	@/usr/bin/python3 scripts/check_links.py

# clang-tidy 14 (pinned) with .clang-tidy's checks over build/compile_commands.json's src/
# translation units (TIDY_FILES: a regex of paths); any finding fails.
TIDY_FILES ?= ^$(CURDIR)/src/
tidy: build
	@bash scripts/tidy.sh $(BUILD) '$(TIDY_FILES)'

# clang -Wthread-safety -Werror over src/ (see src/shared/base/tsa.h: what is annotated, and what
# clang can check in C).
thread-safety: build
	@bash scripts/thread-safety.sh $(BUILD)

bench: build
	@echo "see docs/benchmarks.md"

clean:
	rm -rf build build-asan build-tsan build-fuzz dist
