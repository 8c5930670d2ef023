# mk/detect.mk - optional libraries found on this host.  Each knob is
# auto|0|1: auto builds the part when its header exists, 1 insists (the
# compiler then says what is missing), 0 leaves it out.
#
# The transports' own probes live beside them (transport/*/transport.mk).

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

# libcrypto (OpenSSL) for HMAC-SHA256 and random nonces (src/auth.c).
CRYPTO_LIBS := $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)

# The device layer's loader is always in libweft (cuda/weft_cuda.h); the
# real layer is libweft_cuda.so, loaded at run time (mk/cuda.mk).  CUDA=0
# builds a loader that never loads it.
CUDA_FLAGS := $(if $(filter 0,$(CUDA)),-DWF_CUDA_DISABLED)

# The launchers' process-management interfaces (src/rdv/pmi_*.c): compiled
# against <pmix.h> (libpmix-dev) and Slurm's <slurm/pmi2.h>
# (libpmi2-0-dev) for their types, the libraries loaded at run time, so
# libweft runs where neither is installed.  PMI=auto builds each whose
# header exists; hydra's PMI-1 needs no header and is always built.
PMI ?= auto
PMIX_HEADER := $(firstword $(wildcard /usr/include/pmix.h \
                                      /usr/lib/*/pmix2/include/pmix.h))
PMI2_HEADER := $(wildcard /usr/include/slurm/pmi2.h)
ifneq ($(PMI),0)
PMI_FLAGS := $(if $(PMIX_HEADER),-DWF_HAVE_PMIX) \
             $(if $(PMI2_HEADER),-DWF_HAVE_PMI2)
# Only the PMIx file sees PMIx's folder, which holds headers named like
# PMIx's internals.
$(BUILD)/obj/src/rdv/pmi_pmix.o: CPPFLAGS += \
  $(if $(PMIX_HEADER),-I$(dir $(PMIX_HEADER)))
endif
