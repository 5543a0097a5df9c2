// How kernels are declared: each public kernel is ONE entry of its header's list (an X-macro),
//   X(return type, name, (parameters), (arguments))
// and everything else is generated from the lists: the public declaration (FASA_DECLARE_KERNEL,
// in the header), one declaration per instruction set (isa_api.h, inside fasa::isa_scalar /
// isa_avx2 / isa_avx512) and the public function that forwards to the active set
// (dispatch.cpp). A new kernel is a list entry plus its body in each *.isa.cpp; nothing else.
// Lists named *_DETAIL_KERNELS live in namespace detail (the non-SIMD bodies tests compare).
#pragma once

#define FASA_DECLARE_KERNEL(ret, name, params, args) ret name params;
