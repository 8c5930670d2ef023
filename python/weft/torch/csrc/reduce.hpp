// How a torch reduction maps onto weft: dtypes weft reduces natively,
// the ones staged through a wider or real type, and the reductions weft
// lacks (BAND/BOR/BXOR on integers, PREMUL_SUM), which the backend
// computes on an allgather or before a SUM.
#pragma once

#include <optional>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "weft.h"

namespace weft_torch {

// weft's dtype for a torch dtype it reduces as is, if any
std::optional<weft_dtype_t> nativeDtype(at::ScalarType type);

// A contiguous buffer holding t's values in a form weft reduces: t itself
// when possible, else a copy (int16 widened to int32, a PREMUL_SUM's
// scaled copy) that the caller copies back into t.
struct Reducible {
  at::Tensor buf;
  weft_dtype_t dtype;
  size_t count;
  weft_op_t op;
};

// BAND/BOR/BXOR on an integer tensor: weft has no bitwise reductions, so
// the backend gathers every rank's tensor and reduces them locally.
bool needsGatheredReduce(const at::Tensor& t, const c10d::ReduceOp& op);

// Throws WeftException(ERR_UNSUPPORTED) naming the dtype and reduction.
Reducible reducible(const at::Tensor& t, const c10d::ReduceOp& op,
                    const char* what);

// out <- the bitwise reduction of the `size` rows of gathered.
void reduceGathered(const at::Tensor& gathered, const c10d::ReduceOp& op,
                    const at::Tensor& out);

}  // namespace weft_torch
