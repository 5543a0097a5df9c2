// Declares every instruction set's kernels: fasa::isa_scalar, and on x86-64 fasa::isa_avx2 and
// fasa::isa_avx512 (see core/isa.h). Included by the *.isa.cpp files (so a kernel's calls to
// other kernels stay in its own set) and by dispatch.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fasa/kernels/attend.h"
#include "fasa/kernels/bandwidth.h"
#include "fasa/core/dtype.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_amx.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/tip.h"

namespace fasa::isa_scalar {
#include "fasa/kernels/isa_api.inc"
}  // namespace fasa::isa_scalar

#if FASA_X86
namespace fasa::isa_avx2 {
#include "fasa/kernels/isa_api.inc"
}  // namespace fasa::isa_avx2

namespace fasa::isa_avx512 {
#include "fasa/kernels/isa_api.inc"
}  // namespace fasa::isa_avx512
#endif
