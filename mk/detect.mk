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
