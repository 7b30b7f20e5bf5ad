# Front door: `make test` and `make demo` set up everything they need themselves.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all deps build test demo sanitize clean

all: build

deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure

demo: build
	@tools/demo.sh $(BUILD)

# The sanitizer build CI runs once: ASan+UBSan over the daemon, the library and the tests.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DRDMAEMU_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

clean:
	rm -rf build build-asan
