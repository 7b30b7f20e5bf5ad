# Front door: `make test` and `make demo` set up everything they need themselves.
BUILD ?= build
CMAKE_FLAGS ?=
WERROR ?= OFF # ON in CI: compiler warnings are errors
JOBS ?= $(shell nproc)

.PHONY: all deps build check test demo sanitize tsan fuzz soak format tidy clean

all: build

deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DRDMAEMU_WERROR=$(WERROR) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The unit and protocol tests run side by side (each is one process on its own: no daemons, ports
# of the kernel's choosing); the others one at a time, as they start daemons and time things.
UNIT_LABELS := '^(unit|protocol)$$'
test: build
	cd $(BUILD) && ctest -L $(UNIT_LABELS) -j $(JOBS) --output-on-failure
	cd $(BUILD) && ctest -LE $(UNIT_LABELS) --output-on-failure $(CTEST_ARGS)

# The quick loop while changing code: build, then the unit and protocol tests (no daemons, no VM,
# no package installs; about a minute once built). Needs the packages `make deps` installs.
check: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest -L $(UNIT_LABELS) -j $(JOBS) --output-on-failure

# Every tracked C/C++ file as clang-format formats it (CI checks this).
format:
	git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format-14 -i

# clang-tidy (.clang-tidy's checks) on the C/C++ files changed since TIDY_BASE; CI: the last 10
# commits. Needs the build's compile_commands.json.
TIDY_BASE ?= HEAD~1
tidy: $(BUILD)/CMakeCache.txt
	tools/check-tidy.sh $(BUILD) $(TIDY_BASE)

demo: build
	@tools/demo.sh $(BUILD)

# The sanitizer build CI runs once: ASan+UBSan over the daemon, the library and the tests: the unit
# and protocol tests and the integration tests labelled `sanitize` (tests/integration/CMakeLists.txt:
# short runs that reach the daemon's and the libraries' code; the long and timed ones run in
# `make test` only, to keep CI well under an hour). real_stacks is never among them: with the ASan
# runtime preloaded into Debian's libfabric 1.17, fi_pingpong -v stops on libfabric's own
# heap-buffer-overflow (inet_ntop in fi_tostr).
CTEST_ARGS ?=
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DRDMAEMU_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
	  CTEST_ARGS="-L sanitize"

# ThreadSanitizer over the daemon, the library and the tests: the unit and protocol tests, then
# the integration tests whose programs run threads of their own against the NIC (rsockets'
# keepalive thread, examples, pingpongs with the NIC's async events). Not in CI: a third full
# build and run would take CI past an hour. A race stops the process that has it (a daemon too),
# so the test fails. (doorbell is left out: it counts syscalls against the NIC's polling window,
# which TSan's slowdown moves.)
TSAN_TESTS ?= ^(rc_pingpong|rdmacm_rsockets|examples|dead_nic)$$
tsan: deps
	$(MAKE) build BUILD=build-tsan CMAKE_FLAGS="-DRDMAEMU_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)"
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest -L 'unit|protocol' --output-on-failure
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest -R '$(TSAN_TESTS)' --output-on-failure

# The fuzz targets (tests/fuzz) with clang's libFuzzer under ASan+UBSan: each replays its seeds and
# kept crashes, then fuzzes for FUZZ_SECONDS (three targets: a minute). A crash fails; its input
# is left in build-fuzz/fuzz-artifacts/ for tests/fuzz/regressions/. Not in CI, for time (.ci/run):
# `make test` replays the seeds and kept crashes (fuzz_replay_*); run this when a parser changes.
FUZZ_SECONDS ?= 20
fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DRDMAEMU_FUZZ=ON -DRDMAEMU_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DRDMAEMU_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS) --target fuzz_targets
	cd build-fuzz && ctest -L fuzz --output-on-failure

# The soak in full (tests/integration/soak.sh): SOAK_SECONDS of randomized RC and UD traffic across
# 4 hosts on a faulty wire, programs and daemons killed at random; SOAK_SEED picks the schedule.
SOAK_SECONDS ?= 480
SOAK_SEED ?= 1
soak: build
	bash tests/integration/soak.sh $(BUILD)/bin/rdmaemu $(BUILD)/bin/rc_integrity \
	  $(BUILD)/bin/ud_integrity $(SOAK_SECONDS) $(SOAK_SEED)

clean:
	rm -rf build build-asan build-tsan build-fuzz
