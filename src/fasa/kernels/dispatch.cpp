// The public kernel functions, generated from the kernel lists (kernel_list.h): each forwards to
// the active instruction set's body (core/isa.h). The cost is one switch on a relaxed atomic load
// per call, negligible next to the row-sized work of every kernel.
#include "fasa/core/isa.h"
#include "fasa/kernels/isa_api.h"

#if FASA_X86
#define FASA_DISPATCH(call)                    \
  switch (active_isa()) {                      \
    case Isa::Avx512: return isa_avx512::call; \
    case Isa::Avx2: return isa_avx2::call;     \
    default: return isa_scalar::call;          \
  }
#else
#define FASA_DISPATCH(call) return isa_scalar::call;
#endif

#define FASA_FORWARD_KERNEL(ret, name, params, args) \
  ret name params { FASA_DISPATCH(name args) }
#define FASA_FORWARD_DETAIL_KERNEL(ret, name, params, args) \
  ret name params { FASA_DISPATCH(detail::name args) }

namespace fasa {

FASA_ALL_KERNELS(FASA_FORWARD_KERNEL)

namespace detail {
FASA_ALL_DETAIL_KERNELS(FASA_FORWARD_DETAIL_KERNEL)
}  // namespace detail

}  // namespace fasa
