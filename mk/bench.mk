# mk/bench.mk - benchmarks and the experiments behind docs/performance.md,
# docs/algorithms.md and the records in bench/results/.  None of them is
# part of `make test`; the ones against Open MPI and Gloo install their
# own packages (scripts/install-compare-deps.sh).
.PHONY: bench bench-report compare bench-check bench-stalls bench-cpu \
        bench-reduce bench-tcp-floor bench-tcp-levers bench-latency algo-fit \
        bench-netns bench-ab bench-shm

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

# ---- The harnesses of the peers and weft's twin (bench/compare/).
COMPARE_DIR := $(BUILD)/compare
MPICC ?= mpicc
PEER_HARNESSES := $(COMPARE_DIR)/mpi_allreduce $(COMPARE_DIR)/gloo_allreduce
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

# weft against Open MPI and Gloo, side by side (bench/compare/compare.sh;
# COMPARE_RANKS, COMPARE_SIZES, COMPARE_ITERS, COMPARE_REPEAT).
compare: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(PEER_HARNESSES)
	COMPARE_RANKS="$(COMPARE_RANKS)" COMPARE_SIZES="$(COMPARE_SIZES)" \
	  COMPARE_ITERS="$(COMPARE_ITERS)" COMPARE_REPEAT="$(COMPARE_REPEAT)" \
	  bench/compare/compare.sh $(BUILD)

# Regression guard: fails when weft's 64 MiB allreduce on loopback falls
# below the best TCP peer (bench/compare/check.sh).
bench-check: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(PEER_HARNESSES)
	bench/compare/check.sh $(BUILD)

# Time against size around 64 KiB and every power of two, weft and the
# TCP peers (bench/compare/stalls.sh; STALLS_RANKS, STALLS_ITERS): fails
# when weft's time at a size exceeds twice its time at a larger one.
bench-stalls: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(PEER_HARNESSES)
	STALLS_RANKS="$(STALLS_RANKS)" STALLS_ITERS="$(STALLS_ITERS)" \
	  bench/compare/stalls.sh $(BUILD)

# CPU seconds per GB allreduced, weft against the same peers
# (bench/compare/cpu.sh; CPU_RANKS, CPU_SIZE, CPU_ITERS).
bench-cpu: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(PEER_HARNESSES)
	CPU_RANKS="$(CPU_RANKS)" CPU_SIZE="$(CPU_SIZE)" CPU_ITERS="$(CPU_ITERS)" \
	  bench/compare/cpu.sh $(BUILD)

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
# LATENCY_RANKS, LATENCY_ROUNDS, LATENCY_ITERS).
bench-latency: all $(TCP_FLOOR) $(WEFT_HARNESS)
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce
	LATENCY_RANKS="$(LATENCY_RANKS)" LATENCY_ROUNDS="$(LATENCY_ROUNDS)" \
	  LATENCY_ITERS="$(LATENCY_ITERS)" bench/compare/latency.sh $(BUILD)

# Two builds interleaved round by round (bench/compare/ab.sh): did a
# change move the 8-byte or the 64 MiB allreduce?  BASE=DIR is the other
# build (e.g. a worktree of the commit before, built with make all
# DIR/compare/weft_allreduce); AB_RANKS, AB_ROUNDS tune it.
bench-ab: all $(WEFT_HARNESS)
	@test -n "$(BASE)" || { echo "bench-ab: set BASE=BUILD_DIR"; exit 2; }
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce
	AB_RANKS="$(AB_RANKS)" AB_ROUNDS="$(AB_ROUNDS)" \
	  bench/compare/ab.sh $(BASE) $(BUILD)

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
# weft's shared memory against Open MPI's, allreduce and broadcast, every
# size, the median of interleaved rounds' ratios (bench/compare/shm.sh;
# SHM_RANKS, SHM_ROUNDS, SHM_SIZES, SHM_ITERS tune it).
bench-shm: all $(WEFT_HARNESS)
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce
	bench/compare/shm.sh $(BUILD)

bench-netns: all
	@scripts/install-compare-deps.sh
	$(MAKE) $(COMPARE_DIR)/mpi_allreduce
	scripts/bench-netns.sh $(BUILD)
