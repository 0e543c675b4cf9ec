# SPDX-License-Identifier: MIT
# The front door: make deps | build | run | test | bench  (CONTRACT §1)
# and: make fuzz [FUZZ_SECONDS=N] | soak [SOAK_SECONDS=N]  (docs/internals/fuzzing.md,
# docs/PERFORMANCE.md)
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
PORT       ?= 8080
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 300

.PHONY: all deps build build-asan build-fuzz run test test-cgroup2 layers funclen statuses guide bench bench-codemode fuzz soak image format format-check clean

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

# libFuzzer targets: clang, ASan+UBSan and coverage on every object, apart from the gcc builds.
$(BUILD_FUZZ)/build.ninja:
	CC=clang meson setup $(BUILD_FUZZ) --buildtype=debugoptimized -Dfuzzing=true \
	  -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true

build-fuzz: deps $(BUILD_FUZZ)/build.ninja
	ninja -C $(BUILD_FUZZ) fuzz

run: build
	./$(BUILD)/sandboxd serve --port $(PORT) --definitions examples/apps

test: build build-asan build-fuzz
	@tests/run.sh

# src/ folders include downward only (the layer order in tests/layers.py); tests/run.sh runs it too
layers:
	@/usr/bin/python3 tests/layers.py --self-test && /usr/bin/python3 tests/layers.py

# no function in src/ over 120 lines (tests/funclen.py); tests/run.sh runs it too
funclen:
	@/usr/bin/python3 tests/funclen.py --self-test && /usr/bin/python3 tests/funclen.py

# HTTP statuses are chosen in api/status.c only (tests/http_statuses.py); tests/run.sh runs it too
statuses:
	@/usr/bin/python3 tests/http_statuses.py --self-test && /usr/bin/python3 tests/http_statuses.py

# every path docs/internals/HACKING.md names exists (tests/guide_paths.py); tests/run.sh runs it too
guide:
	@/usr/bin/python3 tests/guide_paths.py --self-test && /usr/bin/python3 tests/guide_paths.py

# sandboxd on a pure cgroup v2 host: a Debian 12 VM built once into .cache/cgroup2/
test-cgroup2: build
	@tests/cgroup2/run.sh

# Every fuzz target for FUZZ_SECONDS each; fails on any finding.
fuzz: build-fuzz
	@fuzz/run.sh $(FUZZ_SECONDS)

# Mixed load against the release build for SOAK_SECONDS; fails when resources grow.
soak: build
	@/usr/bin/python3 bench/soak.py --seconds $(SOAK_SECONDS)

bench: build
	@bench/run.sh
	@bench/codemode/run.sh

# Tokens in a model's context, direct tool calling against code mode (docs/PERFORMANCE.md):
# one line per task, TASK direct=N code=M saving=P%
bench-codemode: build
	@bench/codemode/run.sh

# The OCI image localhost/sandboxd:latest, from Debian packages (deploy/image/build.sh)
image: build
	@deploy/image/build.sh $(BUILD)

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'fuzz/*.c' 'fuzz/*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'fuzz/*.c' 'fuzz/*.h')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
