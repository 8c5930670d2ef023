# mk/test.mk - the test suites (test/, docs/testing.md): `make test`,
# `make check`, the soak, the Python suite, the verbs suite in QEMU guests
# and the launchers.

TEST_DIRS := harness algo plan select core reduce coll transport rdv fault tools cuda topo
TEST_SRCS := $(wildcard $(TEST_DIRS:%=test/%/*.c))
# cuda/reduce.cu's kernels built for the CPU (cuda/cuda_compat.h's shim):
# the tests run them without a GPU (the rule is in mk/cuda.mk).
CUDA_SHIM_OBJ := $(BUILD)/test-obj/cuda/reduce_shim.o
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/test-obj/%.o) $(CUDA_SHIM_OBJ)
TEST_BIN := $(BUILD)/test/weft-test
# A C program under launchers (test/launchers/): public API only.
LAUNCH_CHECK := $(BUILD)/test/comm_init_check

$(BUILD)/test-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itest/harness $(CFLAGS) -c $< -o $@

$(TEST_BIN): $(TEST_OBJS) $(BUILD)/lib/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(TEST_OBJS) $(BUILD)/lib/libweft.a -o $@ $(LDLIBS)

$(LAUNCH_CHECK): $(BUILD)/tool-obj/test/launchers/comm_init_check.o $(BUILD)/lib/libweft.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o,$^) -L$(BUILD)/lib -lweft $(RPATH) -o $@ $(LDLIBS)

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
# the larger coll_allreduce_procs_nN, the netns fault tests and the tty
# progress line of weft-bench (processes running the code that the
# threaded tests already cover: minutes of TSan time for no new
# interleavings).
TSAN_ONE_THREAD := single-threaded unit test: nothing for TSan to check
TSAN_SKIPS := algo_ reduce_ plan_ cuda_kernels_ cuda_layer_
TSAN_SAME_CODE := processes of code the threaded tests cover under TSan
TSAN_SKIPS_PROCS := coll_allreduce_procs_n5 coll_allreduce_procs_n7 \
                    coll_allreduce_procs_n8 \
                    tools_bench_progress_line_on_tty_only fault_netns_
# The registration tests over TCP swap a running engine's transport table
# for a recording copy, which the progress thread reads without a lock: a
# race of the test's own instrument, not of the library.
TSAN_TEST_HOOK := swaps the transport table of a running engine: a race of the test itself
TSAN_SKIPS_HOOK := coll_registration_once_per_operation \
                   coll_registration_none_when_not_asked
TEST_ARGS ?= $(if $(TSAN),$(foreach p,$(TSAN_SKIPS),--skip '$(p)=$(TSAN_ONE_THREAD)') \
  $(foreach p,$(TSAN_SKIPS_PROCS),--skip '$(p)=$(TSAN_SAME_CODE)') \
  $(foreach p,$(TSAN_SKIPS_HOOK),--skip '$(p)=$(TSAN_TEST_HOOK)'))
# halt_on_error: a report fails the test that produced it.
export ASAN_OPTIONS ?= detect_leaks=1:halt_on_error=1:abort_on_error=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/scripts/tsan.supp
C_SUITE := $(BUILD)/test/c-suite
.PHONY: test check soak python test-python test-torch bench-python test-rdma \
  test-horovod bench-horovod tf test-tf \
  test-launchers
test: deps
	$(MAKE) all $(TEST_BIN) $(WEFT_HARNESS) $(CUDA_BUILD) $(FORTRAN_BUILD) \
	  $(APPS_BUILD)
	$(MAKE) check
	@echo "$(TEST_BIN) --build $(BUILD)"
	@{ WF_TEST_TIMEOUT_MULT=$(TEST_TIMEOUT_MULT) $(STDBUF) $(TEST_BIN) \
	    --build $(BUILD) $(TEST_ARGS); echo $$? > $(C_SUITE).rc; } \
	  | tee $(C_SUITE).log
	@$(if $(SANITIZED),echo "Python suite skipped: sanitizer build",\
	  $(MAKE) --no-print-directory test-python PY_C_SUMMARY=$(C_SUITE).log)
	@$(if $(SANITIZED),echo "TensorFlow slice skipped: sanitizer build",\
	  $(MAKE) --no-print-directory test-tf TF_TEST_ARGS='$(TF_SLICE)')
	@exit $$(cat $(C_SUITE).rc)

# Static checks: export map, no getenv outside config, docs/env.md current.
check: $(BUILD)/lib/libweft.so $(BUILD)/bin/weft-info
	@scripts/check.sh $(BUILD)

# The long versions of the fault and soak tests (test/fault/): 200 trials
# of kill -9 on a random rank, 100,000 random allreduces checked element by
# element.  `make test` runs the same tests with 20 trials and 1,500.
SOAK_TRIALS ?= 200
SOAK_ITERS ?= 100000
soak: all $(TEST_BIN)
	WF_FAULT_TRIALS=$(SOAK_TRIALS) WF_SOAK_ITERS=$(SOAK_ITERS) \
	  WF_TEST_TIMEOUT_MULT=8 $(TEST_BIN) --build $(BUILD) fault_kill9_ fault_soak_

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
# The native torch backend (python/weft/torch/csrc, C++ over libweft) is
# built against the venv's torch after the venv (incremental; needs g++ and
# torch's headers, otherwise the torch tests are skipped with the reason).
TORCH_EXT = $(VENV)/bin/python python/scripts/build_torch_ext.py
python: lib
	@python/scripts/make-venv.sh "$(PYTHON3)" $(VENV)
	@nice -n 5 $(TORCH_EXT)

test-python: lib
	@python/scripts/make-venv.sh "$(PYTHON3)" $(VENV) || \
	  echo "make-venv failed: the Python tests that need it are skipped"
	@[ ! -x $(VENV)/bin/python ] || nice -n 5 $(TORCH_EXT) || \
	  echo "the native torch backend did not build: its tests are skipped"
	@py=$(VENV)/bin/python; [ -x $$py ] || py=python3; \
	  $$py test/python/run.py $(if $(PY_C_SUMMARY),--c-summary $(PY_C_SUMMARY))

# PyTorch's own distributed suite (DistributedTest._DistTestBase, run as
# upstream's test_distributed_spawn.py runs it) on gloo and weft, world
# sizes 2 and 3 (and 8 for the *_group tests), test by test side by side
# (test/python/torch_suite/, docs/pytorch.md).  `make test` runs a slice.
# TORCH_SUITE_GROUP_SIZE=0 leaves out the 8-rank run of the *_group tests.
# The tests that pass on gloo and that the suite skips for weft by name
# then run on weft under the gloo name (suite.py weft-as-gloo);
# TORCH_SUITE_AS_GLOO=0 leaves that out.
TORCH_SUITE_SIZES ?= 2 3
TORCH_SUITE_GROUP_SIZE ?= 8
TORCH_SUITE_AS_GLOO ?= 1
test-torch: python
	@$(VENV)/bin/python test/python/torch_suite/compare.py \
	  --sizes "$(TORCH_SUITE_SIZES)" --group-size $(TORCH_SUITE_GROUP_SIZE) \
	  $(if $(filter 1,$(TORCH_SUITE_AS_GLOO)),--as-gloo) \
	  --out $(BUILD)/torch-suite

# weft.horovod.torch's full suite (test/python/horovod/, docs/horovod.md):
# 1 to 4 ranks, every dtype, the examples under weftrun, torchrun and
# mpirun.  `make test` runs its 2-rank slice (test/python/test_horovod.py).
test-horovod: python $(BUILD)/bin/weftrun
	@WEFTPY_TEST_HOROVOD=1 $(VENV)/bin/python -m pytest -v -rs \
	  test/python/horovod

# weft.horovod.tensorflow and .keras (test/python/tensorflow/,
# docs/horovod.md "TensorFlow and Keras"): a venv of their own, $(VENV_TF),
# from the pins of python/requirements-tf.txt (TensorFlow 2.21 CPU and
# tf_keras; ~600 MB of downloads the first time, instant after), then 1 to
# 4 ranks, every dtype, Keras training against one process, the example
# under weftrun and mpirun.  `make test` runs its 2-rank slice (TF_SLICE:
# every function and the Keras training against one process); the venv it
# needs takes seconds once pip's cache holds the wheels.
VENV_TF ?= .venv-tf
TF_SLICE := -k "test_every_function and 2"
TF_TEST_ARGS ?=
tf: lib
	@python/scripts/make-venv.sh "$(PYTHON3)" $(VENV_TF) \
	  python/requirements-tf.txt tensorflow

test-tf: tf $(BUILD)/bin/weftrun
	@WEFTPY_TEST_TF=1 TF_CPP_MIN_LOG_LEVEL=3 $(VENV_TF)/bin/python -m pytest \
	  -v -rs test/python/tensorflow $(TF_TEST_ARGS)

# DistributedOptimizer's step, fused and unfused, against DDP on weft and
# on gloo (test/python/bench_horovod.py, docs/horovod.md).
bench-horovod: python
	@$(VENV)/bin/python test/python/bench_horovod.py

# Per-call overhead of torch.distributed on weft against weft-bench, and
# DDP/FSDP steps on weft against gloo (test/python/bench_overhead.py).
bench-python: python $(BUILD)/bin/weft-bench
	@$(VENV)/bin/python test/python/bench_overhead.py --build $(BUILD)

# The verbs transport on a real kernel RDMA stack (test/rdma-vm/,
# docs/transports.md): boots QEMU guests with Soft-RoCE and runs the
# conformance suite, the collective tests over WEFT_TRANSPORT=ib, the verbs
# error paths and a two-guest allreduce/broadcast.  Prints a skip with the
# reason where no guest can run.  RDMA_PARTS picks parts of the one-guest
# suite; RDMA_TWO_GUESTS=0 leaves out the two-guest run.  The gloo part
# (weft vs Gloo's ibverbs transport) needs the Gloo harness of `make
# compare`, built here only when that part is asked for.
RDMA_PARTS ?= conformance colls errors netem rails
test-rdma: deps
	$(MAKE) all $(TEST_BIN)
	$(if $(filter gloo,$(RDMA_PARTS)),@scripts/install-compare-deps.sh && \
	  $(MAKE) $(COMPARE_DIR)/gloo_allreduce)
	@test/rdma-vm/run.sh $(BUILD) $(RDMA_PARTS)

# weft under the launchers clusters use (test/launchers/, docs/launchers.md):
# Slurm (a real slurmctld + slurmd + munged), torchrun, mpirun and the MPI
# bootstrap example, 4 network namespaces as hosts, weft-rendezvous as a
# service, DDP under Spark's TorchDistributor and Ray's TorchTrainer.
# Installs Slurm, munge, Open MPI, MPICH and Java first (as root), and
# pyspark and Ray into .venv in the spark_ray part; parts that cannot run
# here are skipped with the reason.  LAUNCHER_PARTS picks parts.
LAUNCHER_PARTS ?=
test-launchers: deps
	@scripts/install-launcher-deps.sh || \
	  echo "test-launchers: packages missing; the parts that need them skip"
	$(MAKE) all $(LAUNCH_CHECK)
	@test/launchers/run.sh $(BUILD) $(LAUNCHER_PARTS)
