// The intrinsics header for *.isa.cpp files: include it with the other includes, before
// isa_begin.h (GCC lets target-specific intrinsics be used in functions compiled for the target).
#pragma once

#if FASA_X86
#include <immintrin.h>
#endif
