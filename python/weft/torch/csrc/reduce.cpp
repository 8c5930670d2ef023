// Reductions of the c10d backend (see reduce.hpp).
#include "reduce.hpp"

#include "work.hpp"

namespace weft_torch {

using RO = c10d::ReduceOp;

std::optional<weft_dtype_t> nativeDtype(at::ScalarType type) {
  switch (type) {
    case at::kChar: return WEFT_INT8;
    case at::kByte: return WEFT_UINT8;
    case at::kShort: return WEFT_INT16;
    case at::kUInt16: return WEFT_UINT16;
    case at::kInt: return WEFT_INT32;
    case at::kLong: return WEFT_INT64;
    case at::kUInt32: return WEFT_UINT32;
    case at::kUInt64: return WEFT_UINT64;
    case at::kHalf: return WEFT_FLOAT16;
    case at::kBFloat16: return WEFT_BFLOAT16;
    case at::kFloat: return WEFT_FLOAT32;
    case at::kDouble: return WEFT_FLOAT64;
    // OCP FP8; the "fnuz" variants are other formats and have no weft dtype
    case at::kFloat8_e4m3fn: return WEFT_FLOAT8_E4M3;
    case at::kFloat8_e5m2: return WEFT_FLOAT8_E5M2;
    default: return std::nullopt;
  }
}

namespace {

std::optional<weft_op_t> nativeOp(RO::RedOpType op) {
  switch (op) {
    case RO::SUM: return WEFT_SUM;
    case RO::AVG: return WEFT_AVG;
    case RO::PRODUCT: return WEFT_PROD;
    case RO::MIN: return WEFT_MIN;
    case RO::MAX: return WEFT_MAX;
    case RO::PREMUL_SUM: return WEFT_SUM;  // after scaling
    case RO::BAND: return WEFT_BAND;
    case RO::BOR: return WEFT_BOR;
    case RO::BXOR: return WEFT_BXOR;
    default: return std::nullopt;
  }
}

// bool: logical or / and are max / min over 0 and 1; xor is bitwise
std::optional<weft_op_t> boolOp(RO::RedOpType op) {
  switch (op) {
    case RO::SUM: case RO::MAX: case RO::BOR: return WEFT_MAX;
    case RO::PRODUCT: case RO::MIN: case RO::BAND: return WEFT_MIN;
    case RO::BXOR: return WEFT_BXOR;
    default: return std::nullopt;
  }
}

bool isBitwise(RO::RedOpType op) {
  return op == RO::BAND || op == RO::BOR || op == RO::BXOR;
}

std::string opName(RO::RedOpType op) {
  switch (op) {
    case RO::SUM: return "SUM";
    case RO::AVG: return "AVG";
    case RO::PRODUCT: return "PRODUCT";
    case RO::MIN: return "MIN";
    case RO::MAX: return "MAX";
    case RO::BAND: return "BAND";
    case RO::BOR: return "BOR";
    case RO::BXOR: return "BXOR";
    case RO::PREMUL_SUM: return "PREMUL_SUM";
    default: return "ReduceOp(" + std::to_string(int(op)) + ")";
  }
}

[[noreturn]] void unsupported(const char* what, RO::RedOpType op,
                              at::ScalarType type, const char* why) {
  throw WeftException(WEFT_ERR_UNSUPPORTED, what,
                      opName(op) + " on " + c10::toString(type) +
                          " tensors (" + why + ")");
}

// The factor of a PREMUL_SUM, from its supplement.
at::Tensor premulFactor(const RO& op, const at::Tensor& like) {
  auto* sup =
      dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(sup != nullptr, "weft: PREMUL_SUM without its factor");
  if (sup->tensor_factor.defined())
    return sup->tensor_factor.to(like.options().device(at::kCPU));
  return at::scalar_tensor(sup->double_factor, like.options());
}

}  // namespace

Reducible reducible(const at::Tensor& t, const RO& op, const char* what) {
  auto type = t.scalar_type();
  auto red = op.op_;
  size_t n = static_cast<size_t>(t.numel());
  if (type == at::kBool) {
    auto bop = boolOp(red);
    if (!bop)
      unsupported(what, red, type, "bool takes SUM/MAX/BOR as or, "
                                   "PRODUCT/MIN/BAND as and, and BXOR");
    return {t.contiguous(), WEFT_UINT8, n, *bop};
  }
  auto wop = nativeOp(red);
  if (!wop)
    unsupported(what, red, type, "weft reduces SUM, AVG, PRODUCT, MIN, "
                                 "MAX, BAND, BOR, BXOR and PREMUL_SUM");
  if (isBitwise(red) && !at::isIntegralType(type, /*includeBool=*/false))
    unsupported(what, red, type, "BAND/BOR/BXOR take integer or bool "
                                 "tensors");
  if (red == RO::PREMUL_SUM) {
    if (!at::isFloatingType(type))
      unsupported(what, red, type, "PREMUL_SUM takes floating tensors");
    // torch has no fp8 arithmetic: those scale in float32
    auto wide = at::isFloat8Type(type) ? t.to(at::kFloat) : t;
    auto scaled = (wide * premulFactor(op, wide)).to(type).contiguous();
    auto dt = nativeDtype(type);
    if (!dt)
      unsupported(what, red, type, "no such weft dtype");
    return {scaled, *dt, n, WEFT_SUM};
  }
  if (auto dt = nativeDtype(type))
    return {t.contiguous(), *dt, n, *wop};
  if (at::isComplexType(type) && (red == RO::SUM || red == RO::AVG)) {
    auto real = type == at::kComplexFloat ? WEFT_FLOAT32 : WEFT_FLOAT64;
    if (type == at::kComplexFloat || type == at::kComplexDouble)
      return {t.contiguous(), real, 2 * n, *wop};
  }
  unsupported(what, red, type, at::isComplexType(type)
                                   ? "complex tensors take SUM and AVG"
                                   : "no weft dtype for it");
}

}  // namespace weft_torch
