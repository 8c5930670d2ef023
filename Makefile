# weft - plain GNU make.  Knobs: CUDA=auto|0|1 IB=auto|0|1 HWLOC=auto|0|1
# DEBUG=1 (no optimisation) ASAN=1 (address+undefined sanitizers, builds in
# build-asan) TSAN=1 (thread sanitizer, builds in build-tsan) PREFIX=...
# Targets: all lib tools bench bench-report bench-reduce bench-netns algo-fit
# bench-check bench-cpu bench-stalls bench-latency bench-tcp-floor bench-tcp-levers test test-launchers test-gpu test-rdma cuda check install
# clean docs deps compare fuzz fuzz-build soak python test-python

PREFIX ?= /usr/local
# Sanitizer builds get their own tree: objects of different flags never mix.
BUILD ?= $(if $(ASAN),build-asan,$(if $(TSAN),build-tsan,build))
CC ?= gcc
DEBUG ?=
ASAN ?=
TSAN ?=
CUDA ?= auto
IB ?= auto
HWLOC ?= auto

# The device layer's loader and the fake layer are always in libweft
# (cuda/weft_cuda.h); the real layer is libweft_cuda.so, loaded at run time.
# CUDA=0 builds a loader that never loads it.
CUDA_SRC := cuda/dev_load.c cuda/dev_fake.c
CUDA_FLAGS := $(if $(filter 0,$(CUDA)),-DWF_CUDA_DISABLED)

# The verbs transport (transport/ib/) compiles against <infiniband/verbs.h>
# (libibverbs-dev) but loads libibverbs with dlopen, so the library runs on
# hosts without rdma-core.  IB=auto builds it when the header exists.
IB_HEADER := $(wildcard /usr/include/infiniband/verbs.h)
ifeq ($(IB),1)
IB_ON := 1
else ifeq ($(IB),auto)
IB_ON := $(if $(IB_HEADER),1)
endif
IB_SRC := $(if $(IB_ON),$(wildcard transport/ib/*.c))
IB_FLAGS := $(if $(IB_ON),-DWF_HAVE_IB)

# The topology (src/topo/) reads the node with hwloc: HWLOC=auto builds
# the *_hwloc.c files when <hwloc.h> exists, else the *_none.c ones (no
# affinity, staging memory unbound).
HWLOC_HEADER := $(wildcard /usr/include/hwloc.h)
ifeq ($(HWLOC),1)
HWLOC_ON := 1
else ifeq ($(HWLOC),auto)
HWLOC_ON := $(if $(HWLOC_HEADER),1)
endif
TOPO_SRC := $(filter-out src/topo/%_$(if $(HWLOC_ON),none,hwloc).c,\
              $(wildcard src/topo/*.c))
HWLOC_LIBS := $(if $(HWLOC_ON),-lhwloc)

OPT := $(if $(DEBUG),-O0,-O2)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
# FUZZ_SAN is set by `make fuzz` for the library it links the harnesses with.
SAN := $(if $(ASAN),$(SAN_FLAGS)) $(if $(TSAN),$(TSAN_FLAGS)) $(FUZZ_SAN)
CPPFLAGS += -Iinclude -Isrc -Itransport -Icuda -D_GNU_SOURCE $(IB_FLAGS) \
            $(CUDA_FLAGS)
CFLAGS ?= $(OPT) -g
CFLAGS += -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(SAN) -MMD -MP
LIB_CFLAGS := -fvisibility=hidden
LDFLAGS += -pthread $(SAN)
# libcrypto (OpenSSL) for HMAC-SHA256 and random nonces (src/auth.c).
CRYPTO_LIBS := $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)
LDLIBS += -lm $(CRYPTO_LIBS) $(HWLOC_LIBS)

LIB_SRCS := $(wildcard src/*.c src/rdv/*.c src/algo/*.c src/sched/*.c \
              src/reduce/*.c src/util/*.c transport/*.c \
              transport/tcp/*.c) $(TOPO_SRC) $(IB_SRC) $(CUDA_SRC)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

TOOLS := weft-rendezvous weftrun weft-info weft-bench
TOOL_BINS := $(TOOLS:%=$(BUILD)/bin/%)
SPAWN_OBJ := $(BUILD)/tool-obj/src/tools/spawn.o
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/tool-obj/%.o)

TEST_SRCS := $(wildcard test/harness/*.c test/unit/*.c test/coll/*.c \
               test/transport/*.c test/rdv/*.c test/fault/*.c test/tools/*.c \
               test/cuda/*.c test/topo/*.c)
# cuda/reduce.cu's kernels built for the CPU (cuda/cuda_compat.h's shim):
# the tests run them without a GPU.
CUDA_SHIM_OBJ := $(BUILD)/test-obj/cuda/reduce_shim.o
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/test-obj/%.o) $(CUDA_SHIM_OBJ)
TEST_BIN := $(BUILD)/test/weft-test
# A C program under launchers (test/launchers/): public API only.
LAUNCH_CHECK := $(BUILD)/test/comm_init_check

SONAME := libweft.so.0
RPATH := -Wl,-rpath,'$$ORIGIN/../lib'

.PHONY: all lib tools bench test check install clean docs deps compare \
        bench-report bench-reduce bench-netns algo-fit bench-check bench-cpu \
        bench-stalls bench-latency \
        bench-tcp-floor bench-tcp-levers
all: lib tools

lib: $(BUILD)/lib/libweft.so $(BUILD)/lib/libweft.a
tools: $(TOOL_BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

# Tools and the benchmark use the public API only: they see include/ alone.
$(BUILD)/tool-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) -Iinclude -Isrc/tools -D_GNU_SOURCE $(CFLAGS) -c $< -o $@

$(BUILD)/test-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itest/harness $(CFLAGS) -c $< -o $@

$(BUILD)/lib/libweft.so: $(LIB_OBJS) src/libweft.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libweft.map \
	  $(LDFLAGS) $(LIB_OBJS) -o $@ $(LDLIBS)
	ln -sf libweft.so $(BUILD)/lib/$(SONAME)

$(BUILD)/lib/libweft.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/weft-rendezvous: $(BUILD)/tool-obj/src/tools/weft_rendezvous.o $(BUILD)/lib/libweft.so
$(BUILD)/bin/weftrun: $(BUILD)/tool-obj/src/tools/weftrun.o $(SPAWN_OBJ) $(BUILD)/lib/libweft.so
$(BUILD)/bin/weft-info: $(BUILD)/tool-obj/src/tools/weft_info.o $(BUILD)/lib/libweft.so
$(BUILD)/bin/weft-bench: $(BENCH_OBJS) $(SPAWN_OBJ) $(BUILD)/lib/libweft.so
$(LAUNCH_CHECK): $(BUILD)/tool-obj/test/launchers/comm_init_check.o $(BUILD)/lib/libweft.so
$(TOOL_BINS) $(LAUNCH_CHECK):
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o,$^) -L$(BUILD)/lib -lweft $(RPATH) -o $@ $(LDLIBS)

$(TEST_BIN): $(TEST_OBJS) $(BUILD)/lib/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(TEST_OBJS) $(BUILD)/lib/libweft.a -o $@ $(LDLIBS)

deps:
	@scripts/install-deps.sh

# ---- CUDA (cuda/, docs/cuda.md).  The kernels of cuda/reduce.cu: for the
# tests, compiled by the host C++ compiler against the shim; with nvcc
# (CUDA=auto finds /usr/local/cuda or nvcc on PATH), compiled for the GPUs
# in CUDA_ARCHS, with the device layer cuda/dev_cuda.cu, into
# libweft_cuda.so (loaded at run time by cuda/dev_load.c), warnings as
# errors.  `make test` builds it when nvcc is there, so CI proves the
# device code compiles, and cuda_layer_* loads it.
NVCC ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) \
          $(shell command -v nvcc 2>/dev/null))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCHS ?= 80 90
CUDA_LIB := $(BUILD)/lib/libweft_cuda.so
CUDA_BUILD := $(if $(filter 0,$(CUDA)),,$(if $(NVCC),$(CUDA_LIB)))
CUDA_HDRS := $(wildcard cuda/*.h) src/reduce/half.h src/reduce/reduce_ops.h \
             include/weft.h
CUDA_DEPS := cuda/reduce.cu $(CUDA_HDRS)
# One object per .cu, so that editing the device layer does not recompile
# the kernels (minutes of nvcc).  -fvisibility=hidden: the library exports
# wf_cuda_dev_ops alone (dev_cuda.cu marks it), nothing to clash with.
CUDA_OBJS := $(BUILD)/cuda-obj/reduce.o $(BUILD)/cuda-obj/dev_cuda.o
NVCC_FLAGS := -std=c++17 -O3 \
  $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
  -Werror all-warnings \
  -Xcompiler -Wall,-Wextra,-Werror,-fPIC,-fvisibility=hidden \
  -Iinclude -Isrc -Icuda
$(CUDA_SHIM_OBJ): $(CUDA_DEPS)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(OPT) -g -Wall -Wextra -Werror -fno-exceptions \
	  -fno-rtti -fPIC $(SAN) -DWF_CUDA_SHIM -Iinclude -Isrc -Icuda \
	  -x c++ -c $< -o $@
$(BUILD)/cuda-obj/%.o: cuda/%.cu $(CUDA_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
# The CUDA runtime is linked shared (-cudart shared: libcudart.so.13), found
# through an rpath to the toolkit's lib64, rather than nvcc's default static
# copy: a process using CUDA already has libcudart.so loaded, and one
# runtime per process keeps one per-thread error state and one set of
# handles; the host's runtime gets fixes without a rebuild; and the library
# stays small.  The rpath lets dlopen find libcudart without
# LD_LIBRARY_PATH (cuda_layer_loads_* proves it).
$(CUDA_LIB): $(CUDA_OBJS)
	@mkdir -p $(dir $@)
	$(NVCC) -shared -cudart shared -Xlinker -rpath,$(CUDA_HOME)/lib64 \
	  $(CUDA_OBJS) -o $@
.PHONY: cuda
cuda: $(CUDA_LIB)

# `make test-gpu` (test/gpu/, docs/cuda.md): the collectives on device
# buffers with 2-4 ranks on the host's GPU(s), and the stream-ordered
# allreduce.  gpu_colls is C against include/weft.h and the CUDA runtime
# (headers and libcudart.so from the toolkit), built wherever nvcc is, so
# it is known to compile and link before it meets a GPU; run.sh prints
# "SKIP: no GPU (why)" and one skip where none can be used.
GPU_TEST_BIN := $(BUILD)/test/gpu/gpu_colls
GPU_TEST_SRCS := $(wildcard test/gpu/*.c)
$(GPU_TEST_BIN): $(GPU_TEST_SRCS) test/gpu/gpu_util.h $(BUILD)/lib/libweft.so
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude \
	  -I$(CUDA_HOME)/include $(GPU_TEST_SRCS) -o $@ -L$(BUILD)/lib -lweft \
	  -Wl,-rpath,'$$ORIGIN/../../lib' -L$(CUDA_HOME)/lib64 -lcudart \
	  -Wl,-rpath,$(CUDA_HOME)/lib64 -lm
# Only the packages the build needs (GPU hosts are often offline); a
# build made elsewhere runs with test/gpu/run.sh BUILD alone.
.PHONY: test-gpu
test-gpu:
	@scripts/install-deps.sh build-essential pkg-config libssl-dev
	$(MAKE) all $(if $(CUDA_BUILD),$(CUDA_LIB) $(GPU_TEST_BIN))
	@test/gpu/run.sh $(BUILD) \
	  "$(if $(CUDA_BUILD),,$(if $(filter 0,$(CUDA)),built with CUDA=0,nvcc not found))"

# The whole suite: unit, transport, rendezvous, collectives as threads and as
# processes, tools.  Ends with "N passed, N failed, N skipped".
# Under ASAN=1 or TSAN=1 the C suite runs with longer timeouts
# (WF_TEST_TIMEOUT_MULT) and the Python suite is left out: CPython cannot
# load a sanitized libweft.so without preloading the sanitizer runtime.
SANITIZED := $(if $(ASAN)$(TSAN),1)
# stdbuf works by LD_PRELOAD, which ASan refuses to come after; the runner
# flushes its own lines anyway.
STDBUF := $(if $(SANITIZED),,stdbuf -oL)
TEST_TIMEOUT_MULT ?= $(if $(TSAN),6,$(if $(ASAN),4,1))
# TSAN=1 leaves out, reported as skipped with the reason: the unit tests of
# plans, simulators, reductions and the CUDA kernels run on the CPU (one
# thread each, nothing for TSan to check, and a third of its run time);
# the larger allreduce_procs_nN and the
# tty progress line of weft-bench (processes running the code that the
# threaded tests already cover: four minutes of TSan time for no new
# interleavings).
TSAN_ONE_THREAD := single-threaded unit test: nothing for TSan to check
TSAN_SKIPS := algo_ unrooted_ sim_ vsim_ reduce_ plan_ cuda_
TSAN_SAME_CODE := processes of code the threaded tests cover under TSan
TSAN_SKIPS_PROCS := allreduce_procs_n5 allreduce_procs_n7 allreduce_procs_n8 \
                    bench_progress_line_on_tty_only netns_
TEST_ARGS ?= $(if $(TSAN),$(foreach p,$(TSAN_SKIPS),--skip '$(p)=$(TSAN_ONE_THREAD)') \
  $(foreach p,$(TSAN_SKIPS_PROCS),--skip '$(p)=$(TSAN_SAME_CODE)'))
# halt_on_error: a report fails the test that produced it.
export ASAN_OPTIONS ?= detect_leaks=1:halt_on_error=1:abort_on_error=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/scripts/tsan.supp
test: deps
	$(MAKE) all $(TEST_BIN) $(WEFT_HARNESS) $(CUDA_BUILD)
	$(MAKE) check
	@echo "$(TEST_BIN) --build $(BUILD)"
	@{ WF_TEST_TIMEOUT_MULT=$(TEST_TIMEOUT_MULT) $(STDBUF) $(TEST_BIN) \
	    --build $(BUILD) $(TEST_ARGS); echo $$? > $(C_SUITE).rc; } \
	  | tee $(C_SUITE).log
	@$(if $(SANITIZED),echo "Python suite skipped: sanitizer build",\
	  $(MAKE) --no-print-directory test-python PY_C_SUMMARY=$(C_SUITE).log)
	@exit $$(cat $(C_SUITE).rc)

# The long versions of the fault and soak tests (test/fault/): 200 trials
# of kill -9 on a random rank, 100,000 random allreduces checked element by
# element.  `make test` runs the same tests with 20 trials and 1,500.
SOAK_TRIALS ?= 200
SOAK_ITERS ?= 100000
.PHONY: soak
soak: all $(TEST_BIN)
	WF_FAULT_TRIALS=$(SOAK_TRIALS) WF_SOAK_ITERS=$(SOAK_ITERS) \
	  WF_TEST_TIMEOUT_MULT=8 $(TEST_BIN) --build $(BUILD) kill9_ soak_

# ---- Python package and PyTorch backend (python/, test/python/,
# docs/pytorch.md).  `make python` creates $(VENV) (PyTorch 2.x for CPU,
# numpy, pytest, the weft package in development mode; ~2 min and 2.4 GB of
# downloads the first time, instant after).  `make test` runs the Python
# suite after the C suite (the C suite's output is kept in $(C_SUITE).log
# so the last line counts both); it sets the venv up when missing and skips,
# with the reason, what cannot be installed.  PYTHON3 picks the interpreter
# (default: /usr/bin/python3, else python3).
VENV ?= .venv
PYTHON3 ?=
C_SUITE := $(BUILD)/test/c-suite
.PHONY: python test-python
python: lib
	@python/scripts/make-venv.sh "$(PYTHON3)" $(VENV)

test-python: lib
	@python/scripts/make-venv.sh "$(PYTHON3)" $(VENV) || \
	  echo "make-venv failed: the Python tests that need it are skipped"
	@py=$(VENV)/bin/python; [ -x $$py ] || py=python3; \
	  $$py test/python/run.py $(if $(PY_C_SUMMARY),--c-summary $(PY_C_SUMMARY))

# The verbs transport on a real kernel RDMA stack (test/rdma-vm/,
# docs/transports.md): boots QEMU guests with Soft-RoCE and runs the
# conformance suite, the collective tests over WEFT_TRANSPORT=ib, the verbs
# error paths and a two-guest allreduce/broadcast.  Prints a skip with the
# reason where no guest can run.  RDMA_PARTS picks parts of the one-guest
# suite; RDMA_TWO_GUESTS=0 leaves out the two-guest run.  The gloo part
# (weft vs Gloo's ibverbs transport) needs the Gloo harness of `make
# compare`, built here only when that part is asked for.
.PHONY: test-rdma
RDMA_PARTS ?= conformance colls errors netem rails
test-rdma: deps
	$(MAKE) all $(TEST_BIN)
	$(if $(filter gloo,$(RDMA_PARTS)),@scripts/install-compare-deps.sh && \
	  $(MAKE) $(COMPARE_DIR)/gloo_allreduce)
	@test/rdma-vm/run.sh $(BUILD) $(RDMA_PARTS)

# Static checks: export map, no getenv outside config, docs/env.md current.
check: $(BUILD)/lib/libweft.so $(BUILD)/bin/weft-info
	@scripts/check.sh $(BUILD)

BENCH_ARGS ?= allreduce -n 4 -b 8 -e 128M -f 4
bench: deps
	$(MAKE) all
	$(BUILD)/bin/weft-bench $(BENCH_ARGS)

# The same run kept as files: $(BUILD)/bench/report.json and report.png
# (gnuplot-nox, which `make deps` installs).
bench-report: deps
	$(MAKE) all
	@mkdir -p $(BUILD)/bench
	$(BUILD)/bin/weft-bench $(BENCH_ARGS) --percentiles \
	  --json $(BUILD)/bench/report.json --plot $(BUILD)/bench/report.png

# weft against Open MPI and Gloo (bench/compare, docs/performance.md):
# installs its own packages (scripts/install-compare-deps.sh), so `make
# test` never needs MPI or Gloo.  COMPARE_RANKS, COMPARE_SIZES,
# COMPARE_ITERS and COMPARE_REPEAT tune the sweep (bench/compare/compare.sh).
COMPARE_DIR := $(BUILD)/compare
MPICC ?= mpicc
compare: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce $(COMPARE_DIR)/gloo_allreduce
	COMPARE_RANKS="$(COMPARE_RANKS)" COMPARE_SIZES="$(COMPARE_SIZES)" \
	  COMPARE_ITERS="$(COMPARE_ITERS)" COMPARE_REPEAT="$(COMPARE_REPEAT)" \
	  bench/compare/compare.sh $(BUILD)

# Regression guard (not part of make test): fails when weft's 64 MiB
# allreduce on loopback falls below the best TCP peer (bench/compare/check.sh).
bench-check: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce $(COMPARE_DIR)/gloo_allreduce
	bench/compare/check.sh $(BUILD)

# Time against size around 64 KiB and every power of two, weft and the
# TCP peers (bench/compare/stalls.sh; STALLS_RANKS, STALLS_ITERS): fails
# when weft's time at a size exceeds twice its time at a larger one.
bench-stalls: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce $(COMPARE_DIR)/gloo_allreduce
	STALLS_RANKS="$(STALLS_RANKS)" STALLS_ITERS="$(STALLS_ITERS)" \
	  bench/compare/stalls.sh $(BUILD)

# CPU seconds per GB allreduced, weft against the same peers
# (bench/compare/cpu.sh; CPU_RANKS, CPU_SIZE, CPU_ITERS).
bench-cpu: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce $(COMPARE_DIR)/gloo_allreduce
	CPU_RANKS="$(CPU_RANKS)" CPU_SIZE="$(CPU_SIZE)" CPU_ITERS="$(CPU_ITERS)" \
	  bench/compare/cpu.sh $(BUILD)

HARNESS_SRCS := bench/compare/harness.c bench/compare/harness.h
$(COMPARE_DIR)/mpi_allreduce: bench/compare/mpi_allreduce.c $(HARNESS_SRCS)
	@mkdir -p $(dir $@)
	$(MPICC) -O2 -g -std=c11 -Wall -Wextra -Werror $< \
	  bench/compare/harness.c -o $@

# weft's twin of mpi_allreduce (bench-latency): needs only libweft.
WEFT_HARNESS := $(COMPARE_DIR)/weft_allreduce
$(WEFT_HARNESS): bench/compare/weft_allreduce.c $(HARNESS_SRCS) \
		$(BUILD)/lib/libweft.so
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -Wall -Wextra -Werror $(SAN) -Iinclude $< \
	  bench/compare/harness.c -o $@ -L$(BUILD)/lib -lweft $(RPATH) \
	  $(LDFLAGS)

$(COMPARE_DIR)/gloo_allreduce: bench/compare/gloo_allreduce.cc
	@mkdir -p $(dir $@)
	$(CXX) -O2 -g -std=c++17 -Wall -Wextra -Werror $< -o $@ -lgloo -pthread

# Host reduction kernels against memcpy on one core (bench/reduce/): links
# the static library, as the kernels are not public API.
REDUCE_BENCH := $(BUILD)/bin/reduce-bench
$(REDUCE_BENCH): $(BUILD)/test-obj/bench/reduce/reduce_bench.o $(BUILD)/lib/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
bench-reduce: $(REDUCE_BENCH)
	$(REDUCE_BENCH) $(REDUCE_BENCH_ARGS)

# Loopback TCP measured with no library (bench/floor/), each program one
# C file: tcp-floor, small frames and four ways of waiting for them (the
# floor under weft's 8-byte allreduce); tcp-levers, MSG_ZEROCOPY and the
# reduction fused with the receive for large messages.
TCP_FLOOR := $(BUILD)/bin/tcp-floor
TCP_LEVERS := $(BUILD)/bin/tcp-levers
$(BUILD)/bin/tcp-%: bench/floor/tcp_%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $< -o $@
bench-tcp-floor: $(TCP_FLOOR)
	$(TCP_FLOOR) $(TCP_FLOOR_ARGS)
bench-tcp-levers: $(TCP_LEVERS)
	$(TCP_LEVERS) $(TCP_LEVERS_ARGS)

# The 8-byte allreduce, weft over TCP against Open MPI over TCP and the
# bare TCP floor, interleaved round by round (bench/compare/latency.sh;
# LATENCY_RANKS, LATENCY_ROUNDS, LATENCY_ITERS).  After TCP_FLOOR's
# definition: make expands a rule's prerequisites as it reads it.
bench-latency: all $(TCP_FLOOR) $(WEFT_HARNESS)
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce
	LATENCY_RANKS="$(LATENCY_RANKS)" LATENCY_ROUNDS="$(LATENCY_ROUNDS)" \
	  LATENCY_ITERS="$(LATENCY_ITERS)" bench/compare/latency.sh $(BUILD)

# The cost terms of the library's algorithms, for scripts/algo-fit.py (links
# the static library: the terms are not public API).
COST_TERMS := $(BUILD)/bin/cost-terms
$(COST_TERMS): $(BUILD)/test-obj/bench/cost/cost_terms.o $(BUILD)/lib/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Fits the one-host constants of the cost model to sweeps of
# scripts/algo-sweep.sh (docs/algorithms.md): make algo-fit SWEEPS="a.md b.md"
# (ALGO_FIT_ARGS=--tables: the measured tables with the library's picks)
algo-fit: $(COST_TERMS)
	python3 scripts/algo-fit.py --cost-terms $(COST_TERMS) $(ALGO_FIT_ARGS) \
	    $(SWEEPS)

# Multi-host behaviour on one box: one rank per network namespace, joined
# by a bridge, each host's link shaped both ways with tc tbf
# (scripts/bench-netns.sh lists its NETNS_* settings; needs root, otherwise
# it says why and skips).
bench-netns: all
	scripts/bench-netns.sh $(BUILD)

# weft under the launchers clusters use (test/launchers/, docs/launchers.md):
# Slurm (a real slurmctld + slurmd + munged), torchrun, mpirun and the MPI
# bootstrap example, 4 network namespaces as hosts, weft-rendezvous as a
# service.  Installs Slurm, munge, Open MPI and MPICH first (as root);
# parts that cannot run here are skipped with the reason.  LAUNCHER_PARTS picks parts.
LAUNCHER_PARTS ?=
.PHONY: test-launchers
test-launchers: deps
	@scripts/install-launcher-deps.sh || \
	  echo "test-launchers: packages missing; the parts that need them skip"
	$(MAKE) all $(LAUNCH_CHECK)
	@test/launchers/run.sh $(BUILD) $(LAUNCHER_PARTS)

# ---- fuzzing (fuzz/, docs/testing.md).  libFuzzer harnesses built with
# clang and address+undefined sanitizers against a library built the same
# way in $(FUZZ_BUILD).  `make fuzz` runs each for FUZZ_SECONDS on a work
# copy of its committed seeds (fuzz/corpus/NAME); a crash stops make and
# leaves the input in $(FUZZ_BUILD)/artifacts/.  FUZZ_RUNS=N runs each
# harness on N inputs instead (a quick smoke test).
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_CC ?= clang
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz/fuzz_%)
# -Wno-pass-failed: the reduction loops ask for vectorization, which the
# sanitizers' instrumentation defeats; that is expected here.
FUZZ_LIB_SAN := -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                -Wno-pass-failed
.PHONY: fuzz fuzz-build
fuzz-build: deps
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) IB=0 ASAN= TSAN= \
	  FUZZ_SAN="$(FUZZ_LIB_SAN)" $(FUZZ_BUILD)/lib/libweft.a
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZ_CC=$(FUZZ_CC) IB=0 $(FUZZ_BINS)

$(FUZZ_BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_quiet.h $(FUZZ_BUILD)/lib/libweft.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -O1 -g -std=c11 -Wall -Wextra -Werror -pthread \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  $< $(FUZZ_BUILD)/lib/libweft.a -o $@ $(LDLIBS)

fuzz: fuzz-build
	@for n in $(FUZZ_NAMES); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$n $(FUZZ_BUILD)/artifacts; \
	  echo "fuzz_$$n: $(if $(FUZZ_RUNS),$(FUZZ_RUNS) runs,$(FUZZ_SECONDS) s)"; \
	  ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/fuzz/fuzz_$$n \
	    $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) \
	    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$n- \
	    $(FUZZ_BUILD)/corpus/$$n fuzz/corpus/$$n \
	    > $(FUZZ_BUILD)/fuzz_$$n.log 2>&1 \
	  || { tail -60 $(FUZZ_BUILD)/fuzz_$$n.log; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::new_units_added" \
	    $(FUZZ_BUILD)/fuzz_$$n.log; \
	done

docs: $(BUILD)/bin/weft-info
	$(BUILD)/bin/weft-info --env-markdown > docs/env.md

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/weft.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(BUILD)/lib/libweft.so $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libweft.so
	install -m 644 $(BUILD)/lib/libweft.a $(DESTDIR)$(PREFIX)/lib/
	# The CUDA layer, when make cuda built it: libweft looks for it beside
	# itself (docs/cuda.md).
	if [ -f $(CUDA_LIB) ]; then install -m 755 $(CUDA_LIB) $(DESTDIR)$(PREFIX)/lib/; fi
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@HWLOC_LIBS@|$(HWLOC_LIBS)|g' weft.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/weft.pc

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d)
