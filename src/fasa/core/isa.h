// Runtime ISA selection. Kernels (files named *.isa.cpp) are compiled once per instruction set
// into namespaces fasa::isa_scalar, fasa::isa_avx2 and fasa::isa_avx512 (x86-64 only); the public
// kernel functions dispatch to the best set this CPU supports, checked once with cpuid.
// FASA_ISA=scalar|avx2|avx512 in the environment picks a lower one (never one the CPU lacks).
// Every set computes the same bits (tests/kernels/isa_test.cpp), so the choice changes speed only.
#pragma once

#include <string>
#include <vector>

namespace fasa {

enum class Isa {
  Scalar = 0,  // plain C++, any CPU
  Avx2 = 1,    // AVX2 + FMA + F16C (Haswell, Zen 1 and later)
  Avx512 = 2,  // AVX-512 F/BW/VL/DQ + VNNI (Cascade Lake, Ice Lake, Zen 4 and later)
};

const char* isa_name(Isa isa);
// Parses "scalar" | "avx2" | "avx512"; throws fasa::Error naming the choices otherwise.
Isa parse_isa(const std::string& name);
// Sets this build and this CPU can run, best last.
std::vector<Isa> available_isas();
// The set kernels use: the best available, or FASA_ISA's; throws fasa::Error (once, at first
// use) when FASA_ISA is malformed or names a set the CPU or build lacks.
Isa active_isa();
// Forces a set (tests, benchmarks); throws when it is not available.
void set_active_isa(Isa isa);

}  // namespace fasa
