// Opens the instruction-set region of a *.isa.cpp file; include it after every other include,
// open `namespace fasa::FASA_ISA_NS`, and close the region with isa_end.h.
//
// CMake compiles each *.isa.cpp once per set with FASA_ISA_LEVEL = 0 (scalar), 1 (avx2) or 2
// (avx512). The target is switched by `#pragma GCC target` rather than by compiler flags, so only
// the functions defined in the region use the wider instructions: inline functions and template
// instantiations from headers included before it (std::vector, parallel_for) keep the baseline
// ISA, and the linker can never pick an AVX-512 copy of a shared inline function for code that
// runs on a CPU without it (scripts/check_isa_objects.sh verifies the built library).
//
// Inside the region: FASA_AVX2 and FASA_AVX512 are 0 or 1 (use them, not __AVX512F__, which the
// pragma does not define), and <immintrin.h> is available on x86.
#if !defined(FASA_ISA_LEVEL)
#error "*.isa.cpp files are compiled per instruction set by CMake (FASA_ISA_LEVEL unset)"
#endif
#if defined(FASA_ISA_REGION)
#error "isa_begin.h included twice without isa_end.h"
#endif
#define FASA_ISA_REGION 1

#if FASA_ISA_LEVEL == 2
#define FASA_ISA_NS isa_avx512
#define FASA_AVX2 1
#define FASA_AVX512 1
#pragma GCC push_options
#pragma GCC target( \
    "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt")
#elif FASA_ISA_LEVEL == 1
#define FASA_ISA_NS isa_avx2
#define FASA_AVX2 1
#define FASA_AVX512 0
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt")
#else
#define FASA_ISA_NS isa_scalar
#define FASA_AVX2 0
#define FASA_AVX512 0
#pragma GCC push_options
#endif

// GCC 12 warns falsely inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
