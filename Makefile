# Thin wrapper over meson for the two commands of the README:
#   make run    install what is missing, build, build the templates (the Debian base once per
#               machine, a few minutes with progress; the host-/usr ones when no mirror
#               answers, said so), start sbxd on 127.0.0.1:3000; SBXD_ARGS='--egress-max any
#               ...' passes options to sbxd (server/README.md "Command line")
#   make test   install what is missing, build, run every suite; ends with "N passed, N failed"
#   make fuzz   build the libFuzzer harnesses with clang (build-fuzz) and run each for
#               FUZZ_SECONDS (default 60); crashers land in tests/fuzz/crashers/<name>/
#   make fuzz-merge  add what the fuzz runs found to tests/fuzz/corpus/ (minimised, -merge=1)
#   make deb    the Debian package, build-deb/sbx_<version>_amd64.deb (scripts/build-deb.sh;
#               DEB_BUILD_OPTIONS=nocheck skips its unit suite); deploy/systemd/README.md
BUILD    ?= build
STATE    ?= /var/lib/sbx
LISTEN   ?= 127.0.0.1:3000
SBXD_ARGS ?=
# Warnings are errors in CI (CI=true) and whenever WERROR=true.
WERROR   ?= $(if $(filter true,$(CI)),true,false)
FUZZ_SECONDS ?= 60

.PHONY: all deps build run test unit clean format format-check templates fuzz fuzz-merge deb

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) -Dwerror=$(WERROR)

build: deps $(BUILD)/build.ninja
	@meson configure $(BUILD) -Dwerror=$(WERROR) >/dev/null
	ninja -C $(BUILD)

templates: build
	@bash templates/build-all.sh $(STATE)/templates

run: build templates
	$(BUILD)/server/sbxd --listen $(LISTEN) --state-dir $(STATE) $(SBXD_ARGS)

test: build
	@bash scripts/run-tests.sh $(BUILD)

fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

fuzz-merge: deps
	@bash scripts/fuzz.sh --merge

deb: deps
	@bash scripts/build-deb.sh build-deb

unit: build
	meson test -C $(BUILD) --suite unit --print-errorlogs

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-clang build-fuzz build-deb
