# mk/cuda.mk - the CUDA layer (cuda/, docs/cuda.md) and `make test-gpu`.
#
# The kernels of cuda/reduce.cu: for the tests, compiled by the host C++
# compiler against the shim; with nvcc (CUDA=auto finds /usr/local/cuda or
# nvcc on PATH), compiled for the GPUs in CUDA_ARCHS, with the device layer
# cuda/dev_cuda.cu, into libweft_cuda.so (loaded at run time by
# cuda/dev_load.c), warnings as errors.  `make test` builds it when nvcc is
# there, so CI proves the device code compiles, and cuda_layer_* loads it.
NVCC ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) \
          $(shell command -v nvcc 2>/dev/null))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCHS ?= 80 90
CUDA_LIB := $(BUILD)/lib/libweft_cuda.so
CUDA_BUILD := $(if $(filter 0,$(CUDA)),,$(if $(NVCC),$(CUDA_LIB)))
CUDA_HDRS := $(wildcard cuda/*.h) src/reduce/half.h src/reduce/fp8.h \
             src/reduce/reduce_ops.h \
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
