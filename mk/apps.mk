# mk/apps.mk - mini-apps: real codes whose main loop is collectives, built
# twice, on MPI and on weft, to compare answers and time per iteration
# (bench/apps/, docs/apps.md).  `make apps` builds:
#   $(BUILD)/apps/cg_weft    the CG solver of bench/apps/cg/ on weft
#   $(BUILD)/apps/cg_mpi     the same on MPI, where mpicc is found
# `make bench-apps` times both (bench/apps/cg/bench.sh); `make test` builds
# them too (APPS_BUILD) for tools_apps_cg_*, which skips the MPI side with
# the reason where mpicc or mpirun is absent.
MPICC ?= mpicc
APPS_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
APPS_DIR := $(BUILD)/apps
CG_SRC := bench/apps/cg
CG_WEFT := $(APPS_DIR)/cg_weft
CG_MPI := $(APPS_DIR)/cg_mpi
APPS_BUILD := $(CG_WEFT) $(if $(APPS_MPICC),$(CG_MPI))
# One set of flags for every object, and the solver (cg.o, cg_main.o)
# compiled once by $(CC) and linked into both programs: mpicc only adds
# MPI's paths to the same compiler, and sharing the object leaves the
# reductions' order as the only difference between the two answers.
# No sanitizer in the objects, so that they stay one object under ASAN=1
# and TSAN=1 too: cg_weft is linked with $(LDFLAGS), which brings the
# runtime a sanitized libweft.so needs, and cg_mpi without, since Open
# MPI's own leaks and races are not this project's to report.
APPS_CFLAGS := -O2 -g -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L
CG_OBJS := $(APPS_DIR)/obj/cg.o $(APPS_DIR)/obj/cg_main.o

$(APPS_DIR)/obj/%.o: $(CG_SRC)/%.c $(CG_SRC)/cg.h $(CG_SRC)/cg_comm.h
	@mkdir -p $(dir $@)
	$(CC) $(APPS_CFLAGS) -Iinclude -c $< -o $@
$(APPS_DIR)/obj/cg_comm_mpi.o: $(CG_SRC)/cg_comm_mpi.c $(CG_SRC)/cg_comm.h
	@mkdir -p $(dir $@)
	$(APPS_MPICC) $(APPS_CFLAGS) -c $< -o $@

$(CG_WEFT): $(CG_OBJS) $(APPS_DIR)/obj/cg_comm_weft.o $(BUILD)/lib/libweft.so
	$(CC) $(LDFLAGS) $(filter %.o,$^) -L$(BUILD)/lib -lweft $(RPATH) -o $@ -lm
$(CG_MPI): $(CG_OBJS) $(APPS_DIR)/obj/cg_comm_mpi.o
	$(APPS_MPICC) $^ -o $@ -lm

# The library first, as `make test` builds it: cg_weft links it.
.PHONY: apps bench-apps
apps: lib
	@$(MAKE) --no-print-directory $(APPS_BUILD)
	@$(if $(APPS_MPICC),,echo "mpicc not found: $(CG_MPI) is not built" \
	  "(scripts/install-compare-deps.sh installs Open MPI)")

# Both programs on 2 and 4 ranks, alternating round by round; medians of
# the time per iteration and of the rounds' weft / MPI ratios, and a record
# in bench/results/ (bench/apps/cg/bench.sh lists its CG_* settings).
bench-apps: all
	@scripts/install-compare-deps.sh
	$(MAKE) --no-print-directory apps
	bench/apps/cg/bench.sh $(BUILD)
