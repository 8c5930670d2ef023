# transport/ib/transport.mk - the verbs transport's probe, read by the
# Makefile for every transport/*/ folder.  It compiles against
# <infiniband/verbs.h> (libibverbs-dev) but loads libibverbs with dlopen,
# so the library runs on hosts without rdma-core: no library is linked.
# IB=auto builds it when the header exists; IB=0 leaves it out.
IB ?= auto
IB_HEADER := $(wildcard /usr/include/infiniband/verbs.h)
ifeq ($(IB),1)
IB_ON := 1
else ifeq ($(IB),auto)
IB_ON := $(if $(IB_HEADER),1)
endif
ifeq ($(IB_ON),1)
TRANSPORT_FLAGS += -DWF_HAVE_IB
else
TRANSPORTS_OFF += ib
endif
