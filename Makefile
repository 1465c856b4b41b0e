# gpubpf — top-level build.  `make` builds everything into build/;
# `make test`, `make bench`, `make demo` build what they run first.  The
# Debian packages needed are installed by an explicit step,
# `bash scripts/install-deps.sh` (or `make deps` where make is installed);
# a build only checks, once, that they are there.

VERSION    := 0.1.0
BUILD      := build
PREFIX     ?= /usr/local
CC         ?= gcc
CLANG      ?= clang
BPFTOOL    ?= bpftool
ARCH_TRIPLE := $(shell $(CC) -dumpmachine)
# The BPF programs read x86-64 registers and the injector is x86-64 code.
ARCH       := $(shell uname -m | sed 's/x86_64/x86/')
ifneq ($(ARCH),x86)
$(error gpubpf builds for x86-64 only; this machine is $(shell uname -m))
endif

# Quiet rules: one line per target; `make V=1` prints the commands.
ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif

# Keep generated intermediates (skeletons, BPF objects); never leave a
# target a failed command half-wrote.
.SECONDARY:
.DELETE_ON_ERROR:
CUDA_HOME  ?= /usr/local/cuda

CFLAGS     ?= -O2 -g
# -MMD -MP: each object's header dependencies, in a .d file beside it (and
# every object depends on this Makefile: its flags, and trees built before
# there were .d files)
CFLAGS     += -MMD -MP -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE \
              -DGPUBPF_VERSION='"$(VERSION)"' -Ibpf -Iuser -Icupti -I$(BUILD)
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall \
              -I/usr/include/$(ARCH_TRIPLE) -Ibpf
# libbpf, libelf (and its zstd) and zlib are linked statically so the binary
# runs on machines without them; glibc, cJSON and libstdc++ (for demangling
# kernel names) stay shared.
STATIC_LIBS := -Wl,-Bstatic -lbpf -lelf -lzstd -lz -Wl,-Bdynamic
LDLIBS     := $(STATIC_LIBS) -lcjson -lstdc++ -lpthread -lm

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
USER_SRCS  := $(wildcard user/*.c user/*/*.c)
USER_OBJS  := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
LIB_OBJS   := $(filter-out $(BUILD)/user/main.o,$(USER_OBJS))
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
TEST_BIN_SRCS := $(wildcard tests/bin/*.c)
TEST_BINS  := $(patsubst tests/bin/%.c,$(BUILD)/tests/%,$(TEST_BIN_SRCS))
TEST_CXX_SRCS := $(wildcard tests/bin/*.cc)
TEST_BINS  += $(patsubst tests/bin/%.cc,$(BUILD)/tests/%,$(TEST_CXX_SRCS))
BENCH_SRCS := $(wildcard bench/*.c)
SIM_LIB    := $(BUILD)/sim/libcuda.so.1
CUPTI_SRCS := $(wildcard cupti/*.c)
CUPTI_LIB  := $(BUILD)/libgpubpf_cupti.so
# the injection library's variant for the simulated driver (tests, demo)
SIM_INJ_SRCS := $(filter-out cupti/backends.c,$(CUPTI_SRCS)) sim/backend_sim.c
SIM_INJ_LIB := $(BUILD)/sim/libgpubpf_cupti.so
DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: all deps test-bins test fresh-test bench demo install clean
all: $(BUILD)/gpubpf $(CUPTI_LIB) $(SIM_LIB) $(SIM_INJ_LIB)
test-bins: $(UNIT_BINS) $(TEST_BINS)

# Install build and test dependencies (idempotent; fast when present).
deps:
	@bash scripts/install-deps.sh
	@mkdir -p $(BUILD) && touch $(DEPS_STAMP)

# Builds only check that they are installed (once; installing is `deps`).
$(DEPS_STAMP): scripts/install-deps.sh
	@bash scripts/install-deps.sh --check
	@mkdir -p $(BUILD) && touch $(DEPS_STAMP)

$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/*.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .skel.h,,$(notdir $@))_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/user/%.o: user/%.c Makefile | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Only the file that loads the BPF programs includes their skeleton.
SKEL_USERS := user/record/probes.o
$(addprefix $(BUILD)/,$(SKEL_USERS)): $(SKELS)

$(BUILD)/gpubpf: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# The injection library, loaded by the driver through CUDA_INJECTION64_PATH.
# libcupti is dlopen'ed at run time, so the library loads anywhere; only
# InitializeInjection (and gpubpf_late_attach) are exported.
INJ_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -fPIC -shared \
              -pthread -fvisibility=hidden -Icupti -I$(CUDA_HOME)/include \
              -Wl,--no-undefined -Wl,-soname,libgpubpf_cupti.so
$(CUPTI_LIB): $(CUPTI_SRCS) cupti/*.h Makefile | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(INJ_CFLAGS) -o $@ $(CUPTI_SRCS) -ldl -lpthread

# Its variant with the simulated driver's backend too, under the same file
# name (record finds it in a process's maps by that name): the tests and
# `make demo` record with it: record picks it, from sim/ beside its binary,
# for a process whose libcuda is the simulated driver; never installed.
$(SIM_INJ_LIB): $(SIM_INJ_SRCS) cupti/*.h sim/simcu_profiler.h Makefile | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(INJ_CFLAGS) -Isim -o $@ $(SIM_INJ_SRCS) -ldl -lpthread

# The simulated CUDA driver.  -fno-ipa-icf: identical stubs must stay
# separate functions, as in the real libcuda.
$(SIM_LIB): sim/libcuda_sim.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -Wall -fPIC -shared -pthread -fno-ipa-icf \
	      -I$(CUDA_HOME)/include -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread

# libcupti's record iterator runs without a driver: the CUPTI conversion test
# reads hand-filled activity buffers with it.
CUPTI_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/extras/CUPTI/lib64 $(CUDA_HOME)/lib64))
$(BUILD)/cupti/%.o: cupti/%.c Makefile
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC -I$(CUDA_HOME)/include -c $< -o $@

$(BUILD)/tests/test_cupti_records: tests/unit/test_cupti_records.c $(BUILD)/cupti/cupti_convert.o
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -o $@ $(filter %.c %.o,$^) -L$(CUPTI_LIBDIR) -lcupti -Wl,-rpath,$(CUPTI_LIBDIR)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -o $@ $(filter %.c %.o,$^) $(LDLIBS)

$(BUILD)/tests/%: tests/bin/%.c
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) -O2 -g -Wall -pthread -I$(CUDA_HOME)/include -o $@ $< -ldl

# C++ test programs keep their frame pointers and calls (native stacks).
$(BUILD)/tests/%: tests/bin/%.cc
	@mkdir -p $(@D)
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -Wall -fno-omit-frame-pointer -fno-optimize-sibling-calls -o $@ $< -ldl

test: all test-bins
	@bash tests/run.sh

# The README's first two commands, run verbatim as root in a fresh Debian 12
# (debootstrap --variant=minbase) chroot with the CUDA toolkit bind-mounted;
# minutes, downloads from Debian's archive; skips where debootstrap cannot
# run.  Not part of `make test` (tests/t0010-readme-commands.sh checks there
# that the README's commands are the ones this last verified).
fresh-test:
	@bash tests/fresh-debian.sh

demo: all
	@bash scripts/demo.sh

bench: all bench-bins
	@bash bench/run.sh

install: $(BUILD)/gpubpf $(CUPTI_LIB)
	$(call msg,INSTALL,$@)
	$(Q)install -D -m 0755 $(BUILD)/gpubpf $(DESTDIR)$(PREFIX)/bin/gpubpf
	$(call msg,INSTALL,$@)
	$(Q)install -D -m 0755 $(CUPTI_LIB) $(DESTDIR)$(PREFIX)/lib/gpubpf/libgpubpf_cupti.so
	$(call msg,INSTALL,$@)
	$(Q)install -D -m 0755 scripts/gpubpf-cluster $(DESTDIR)$(PREFIX)/bin/gpubpf-cluster

clean:
	rm -rf $(BUILD)

# benchmarks -----------------------------------------------------------------
# Binaries for `make bench` (bench/run.sh); see BENCHMARKS.md.
BENCH_DIR  := $(BUILD)/bench
BENCH_SHAPES := xor sub endbr push
SHAPE_LIBS := $(foreach s,$(BENCH_SHAPES),$(BENCH_DIR)/$(s)/libcuda.so.1)
BENCH_BINS := $(BENCH_DIR)/libcuda.so.1 $(BENCH_DIR)/callcost $(SHAPE_LIBS) \
              $(BENCH_DIR)/empty_uprobe $(BENCH_DIR)/collector_bench \
              $(BENCH_DIR)/gpuwork $(BENCH_DIR)/pysym_bench $(BENCH_DIR)/pingpong

.PHONY: bench-bins
bench-bins: $(BENCH_BINS)
# the probe-site tests run callcost on each prologue shape
test-bins: $(SHAPE_LIBS) $(BENCH_DIR)/callcost

# Trivial stand-ins for the probed entry points: separate, never inlined.
$(BENCH_DIR)/libcuda.so.1: bench/libcuda_bench.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -Wall -fPIC -shared -fno-ipa-icf -fno-inline \
	      -Wl,-soname,libcuda.so.1 -o $@ $<

# The same with each probed-entry prologue shape (bench/libcuda_bench.c).
$(BENCH_DIR)/%/libcuda.so.1: bench/libcuda_bench.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -Wall -fPIC -shared -DBENCH_SHAPE_$* -Wl,-soname,libcuda.so.1 -o $@ $<

$(BENCH_DIR)/callcost: bench/callcost.c
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) -O2 -g -Wall -pthread -o $@ $< -ldl

$(BENCH_DIR)/pingpong: bench/pingpong.c
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) -O2 -g -Wall -pthread -o $@ $<

$(BENCH_DIR)/empty.bpf.o: bench/empty.bpf.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_DIR)/empty.skel.h: $(BENCH_DIR)/empty.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name empty_bpf > $@.tmp && mv $@.tmp $@

$(BENCH_DIR)/empty_uprobe: bench/empty_uprobe.c $(BENCH_DIR)/empty.skel.h
	$(call msg,LINK,$@)
	$(Q)$(CC) -O2 -g -Wall -I$(BENCH_DIR) -o $@ $< $(STATIC_LIBS)

$(BENCH_DIR)/collector_bench: bench/collector_bench.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

$(BENCH_DIR)/pysym_bench: bench/pysym_bench.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# Launches 0-us kernels (and graphs of them) on the simulated driver; the
# tests run bench section 4 with it (tests/t0910-bench-gpu-section.sh).
test-bins: $(BENCH_DIR)/gpuwork
$(BENCH_DIR)/gpuwork: bench/gpuwork.c
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CC) -O2 -g -Wall -o $@ $< -ldl
# end of benchmarks ----------------------------------------------------------

# sanitizers -----------------------------------------------------------------
# `make asan`: gpubpf built with AddressSanitizer and UndefinedBehaviorSanitizer
# (build/asan/gpubpf) and a libFuzzer target for the trace readers
# (build/fuzz/fuzz_reader), each from its own objects so normal builds never
# get sanitized ones.  clang for both: libFuzzer is clang's (libclang-rt-dev).
# `make test` builds them; tests t0700 and t0710 run them.
SAN_CC     ?= $(CLANG)
SAN_FLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=all
SAN_CFLAGS := $(filter-out -O2,$(CFLAGS)) $(SAN_FLAGS)
ASAN_DIR   := $(BUILD)/asan
FUZZ_DIR   := $(BUILD)/fuzz
ASAN_OBJS  := $(patsubst user/%.c,$(ASAN_DIR)/user/%.o,$(USER_SRCS))
FUZZ_OBJS  := $(patsubst user/%.c,$(FUZZ_DIR)/user/%.o,$(filter-out user/main.c,$(USER_SRCS)))

.PHONY: asan
asan: $(ASAN_DIR)/gpubpf $(ASAN_DIR)/libgpubpf_cupti.so $(ASAN_DIR)/sim/libgpubpf_cupti.so \
      $(FUZZ_DIR)/fuzz_reader
test: asan

$(addprefix $(ASAN_DIR)/,$(SKEL_USERS)) $(addprefix $(FUZZ_DIR)/,$(SKEL_USERS)): $(SKELS)
$(ASAN_DIR)/user/%.o: user/%.c Makefile
	@mkdir -p $(@D)
	$(call msg,SAN,$@)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) -c $< -o $@

$(ASAN_DIR)/gpubpf: $(ASAN_OBJS)
	$(call msg,SAN,$@)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# record looks for the injection library beside its binary
$(ASAN_DIR)/libgpubpf_cupti.so: $(CUPTI_LIB)
	@mkdir -p $(@D)
	$(call msg,LN,$@)
	$(Q)ln -sf ../$(notdir $(CUPTI_LIB)) $@

# and, for a process on the simulated driver, for its variant in sim/ there
$(ASAN_DIR)/sim/libgpubpf_cupti.so: $(SIM_INJ_LIB)
	@mkdir -p $(@D)
	$(call msg,LN,$@)
	$(Q)ln -sf ../../sim/$(notdir $(SIM_INJ_LIB)) $@

$(FUZZ_DIR)/user/%.o: user/%.c Makefile
	@mkdir -p $(@D)
	$(call msg,SAN,$@)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/fuzz_reader: tests/fuzz/fuzz_reader.c $(FUZZ_OBJS)
	@mkdir -p $(@D)
	$(call msg,SAN,$@)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.c %.o,$^) $(LDLIBS)
# end of sanitizers ----------------------------------------------------------

# header dependencies of everything built so far
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
