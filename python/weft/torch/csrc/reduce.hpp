// How a torch reduction maps onto weft: dtypes weft reduces natively,
// the ones staged through a real type (complex), bool through uint8, and
// PREMUL_SUM, which weft lacks, scaled before a SUM.
#pragma once

#include <optional>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "weft.h"

namespace weft_torch {

// weft's dtype for a torch dtype it reduces as is, if any
std::optional<weft_dtype_t> nativeDtype(at::ScalarType type);

// A contiguous buffer holding t's values in a form weft reduces: t itself
// when possible, else a copy (a non-contiguous t's, a PREMUL_SUM's scaled
// one) that the caller copies back into t.
struct Reducible {
  at::Tensor buf;
  weft_dtype_t dtype;
  size_t count;
  weft_op_t op;
};

// Throws WeftException(ERR_UNSUPPORTED) naming the dtype and reduction.
Reducible reducible(const at::Tensor& t, const c10d::ReduceOp& op,
                    const char* what);

}  // namespace weft_torch
