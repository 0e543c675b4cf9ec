# SPDX-License-Identifier: MIT
# The front door: make deps | build | run | test | bench  (CONTRACT §1)
BUILD      ?= build
BUILD_ASAN ?= build-asan
PORT       ?= 8080

.PHONY: all deps build build-asan run test test-cgroup2 bench image format format-check clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=release -Dwerror=true

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD_ASAN)/build.ninja:
	meson setup $(BUILD_ASAN) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true

build-asan: deps $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN)

run: build
	./$(BUILD)/sandboxd serve --port $(PORT) --definitions examples/apps

test: build build-asan
	@tests/run.sh

# sandboxd on a pure cgroup v2 host: a Debian 12 VM built once into .cache/cgroup2/
test-cgroup2: build
	@tests/cgroup2/run.sh

bench: build
	@bench/run.sh

# The OCI image localhost/sandboxd:latest, from Debian packages (deploy/image/build.sh)
image: build
	@deploy/image/build.sh $(BUILD)

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
