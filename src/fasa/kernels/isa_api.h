// Every instruction set's kernels: fasa::isa_scalar, and on x86-64 fasa::isa_avx2 and
// fasa::isa_avx512 (see core/isa.h), declared from the kernel lists of the public headers
// (kernel_list.h). Included by the *.isa.cpp files (so a kernel's calls to other kernels stay in
// its own set) and by dispatch.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fasa/core/dtype.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/bandwidth.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/kernel_list.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_amx.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/select.h"
#include "fasa/kernels/tip.h"

// All public kernels, and those of namespace detail.
#define FASA_ALL_KERNELS(X)  \
  FASA_DEQUANT_KERNELS(X)    \
  FASA_MATMUL_KERNELS(X)     \
  FASA_MATMUL_Q8_KERNELS(X)  \
  FASA_MATMUL_Q8K_KERNELS(X) \
  FASA_MATMUL_AMX_KERNELS(X) \
  FASA_OPS_KERNELS(X)        \
  FASA_SELECT_KERNELS(X)     \
  FASA_TIP_KERNELS(X)        \
  FASA_ATTEND_KERNELS(X)     \
  FASA_BANDWIDTH_KERNELS(X)
#define FASA_ALL_DETAIL_KERNELS(X)  \
  FASA_MATMUL_DETAIL_KERNELS(X)     \
  FASA_MATMUL_Q8_DETAIL_KERNELS(X)  \
  FASA_MATMUL_Q8K_DETAIL_KERNELS(X) \
  FASA_OPS_DETAIL_KERNELS(X)

#define FASA_DECLARE_ISA_KERNELS               \
  FASA_ALL_KERNELS(FASA_DECLARE_KERNEL)        \
  namespace detail {                           \
  FASA_ALL_DETAIL_KERNELS(FASA_DECLARE_KERNEL) \
  }

namespace fasa::isa_scalar {
FASA_DECLARE_ISA_KERNELS
}  // namespace fasa::isa_scalar

#if FASA_X86
namespace fasa::isa_avx2 {
FASA_DECLARE_ISA_KERNELS
}  // namespace fasa::isa_avx2

namespace fasa::isa_avx512 {
FASA_DECLARE_ISA_KERNELS
}  // namespace fasa::isa_avx512
#endif
