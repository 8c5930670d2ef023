# weft - plain GNU make.  Knobs: CUDA=auto|0|1 IB=auto|0|1 HWLOC=auto|0|1
# DEBUG=1 (no optimisation) ASAN=1 (address+undefined sanitizers, builds in
# build-asan) TSAN=1 (thread sanitizer, builds in build-tsan) PREFIX=...
#
# This file builds the library and the tools and installs them; the rest
# is in mk/: detect.mk (optional libraries), test.mk (test, check, soak,
# python, test-python, test-rdma, test-launchers), cuda.mk (cuda,
# test-gpu), bench.mk (bench, bench-report, compare, bench-check,
# bench-stalls, bench-cpu, bench-latency, bench-reduce, bench-tcp-floor,
# bench-tcp-levers, algo-fit, bench-netns), fuzz.mk (fuzz, fuzz-build),
# fortran.mk (fortran: the Fortran module, with gfortran) and apps.mk
# (apps, bench-apps: mini-apps on weft and on MPI).
# `make help` lists the targets.

PREFIX ?= /usr/local
# Sanitizer builds get their own tree: objects of different flags never mix.
BUILD ?= $(if $(ASAN),build-asan,$(if $(TSAN),build-tsan,build))
CC ?= gcc
DEBUG ?=
ASAN ?=
TSAN ?=
CUDA ?= auto
HWLOC ?= auto

include mk/detect.mk

# ---- Transports: one folder each under transport/, listed in
# transport/transport_list.h.  A folder's optional transport.mk probes for
# what it needs: it adds the folder's name to TRANSPORTS_OFF when it cannot
# be built, and may add to TRANSPORT_FLAGS and TRANSPORT_LIBS.
TRANSPORTS_OFF :=
TRANSPORT_FLAGS :=
TRANSPORT_LIBS :=
-include $(wildcard transport/*/transport.mk)
TRANSPORTS := $(filter-out $(TRANSPORTS_OFF),\
                $(patsubst transport/%/,%,$(wildcard transport/*/)))
TRANSPORT_SRC := $(wildcard transport/*.c) \
                 $(foreach t,$(TRANSPORTS),$(wildcard transport/$(t)/*.c))

OPT := $(if $(DEBUG),-O0,-O2)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
# FUZZ_SAN is set by `make fuzz` for the library it links the harnesses with.
SAN := $(if $(ASAN),$(SAN_FLAGS)) $(if $(TSAN),$(TSAN_FLAGS)) $(FUZZ_SAN)
CPPFLAGS += -Iinclude -Isrc -Itransport -Icuda -D_GNU_SOURCE \
            $(TRANSPORT_FLAGS) $(CUDA_FLAGS) $(PMI_FLAGS)
CFLAGS ?= $(OPT) -g
CFLAGS += -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(SAN) -MMD -MP
LIB_CFLAGS := -fvisibility=hidden
LDFLAGS += -pthread $(SAN)
LDLIBS += -lm $(CRYPTO_LIBS) $(HWLOC_LIBS) $(TRANSPORT_LIBS)

# cuda/dev_load.c finds the device layer at run time; the layer itself is
# libweft_cuda.so (mk/cuda.mk), or the tests' fake (test/harness/).
LIB_SRCS := $(wildcard src/*.c src/rdv/*.c src/plan/*.c src/algo/*.c \
              src/sched/*.c src/dev/*.c src/reduce/*.c src/node/*.c) \
            $(TOPO_SRC) $(TRANSPORT_SRC) cuda/dev_load.c
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

TOOLS := weft-rendezvous weftrun weft-info weft-bench
TOOL_BINS := $(TOOLS:%=$(BUILD)/bin/%)
# Tools that are scripts, copied as they are.
SCRIPT_BINS := $(BUILD)/bin/weft-timeline
SPAWN_OBJ := $(BUILD)/tool-obj/src/tools/spawn.o
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/tool-obj/%.o)

SONAME := libweft.so.0
RPATH := -Wl,-rpath,'$$ORIGIN/../lib'

.PHONY: all lib tools deps docs install clean help
all: lib tools

lib: $(BUILD)/lib/libweft.so $(BUILD)/lib/libweft.a
tools: $(TOOL_BINS) $(SCRIPT_BINS)

$(BUILD)/bin/weft-timeline: src/tools/weft-timeline
	@mkdir -p $(dir $@)
	install -m 755 $< $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

# Tools and the benchmark use the public API only: they see include/ alone.
$(BUILD)/tool-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) -Iinclude -Isrc/tools -D_GNU_SOURCE $(CFLAGS) -c $< -o $@

$(BUILD)/lib/libweft.so: $(LIB_OBJS) src/libweft.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libweft.map \
	  $(LDFLAGS) $(LIB_OBJS) -o $@ $(LDLIBS)
	ln -sf libweft.so $(BUILD)/lib/$(SONAME)

$(BUILD)/lib/libweft.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/weft-rendezvous: $(BUILD)/tool-obj/src/tools/weft_rendezvous.o $(BUILD)/lib/libweft.so
$(BUILD)/bin/weftrun: $(BUILD)/tool-obj/src/tools/weftrun.o $(SPAWN_OBJ) \
  $(BUILD)/tool-obj/src/tools/hostlist.o $(BUILD)/tool-obj/src/tools/remote.o \
  $(BUILD)/lib/libweft.so
$(BUILD)/bin/weft-info: $(BUILD)/tool-obj/src/tools/weft_info.o $(BUILD)/lib/libweft.so
$(BUILD)/bin/weft-bench: $(BENCH_OBJS) $(SPAWN_OBJ) $(BUILD)/lib/libweft.so
$(TOOL_BINS):
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o,$^) -L$(BUILD)/lib -lweft $(RPATH) -o $@ $(LDLIBS)

deps:
	@scripts/install-deps.sh

include mk/test.mk mk/cuda.mk mk/bench.mk mk/fuzz.mk mk/fortran.mk mk/apps.mk

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
	# The Fortran module, when make fortran (or make test) built it: weft.mod
	# beside weft.h, found by the same -I (docs/fortran.md).
	if [ -f $(FORTRAN_LIB) ]; then \
	  install -m 644 $(FORTRAN_MOD) $(DESTDIR)$(PREFIX)/include/ && \
	  install -m 644 $(FORTRAN_LIB) $(DESTDIR)$(PREFIX)/lib/; fi
	install -m 755 $(TOOL_BINS) $(SCRIPT_BINS) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@HWLOC_LIBS@|$(HWLOC_LIBS)|g' weft.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/weft.pc

clean:
	rm -rf $(BUILD)

# The targets of this file and of mk/*.mk.
help:
	@grep -hE '^[a-z][a-z-]*:([^=]|$$)' Makefile mk/*.mk | cut -d: -f1 | \
	  sort -u | tr '\n' ' '; echo

-include $(LIB_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d)
