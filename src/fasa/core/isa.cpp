#include "fasa/core/isa.h"

#include <atomic>
#include <cstdlib>
#if FASA_X86
#include <cpuid.h>
#endif

#include "fasa/core/error.h"

namespace fasa {

namespace {

#if FASA_X86
// F16C from CPUID leaf 1 (ECX bit 29): __builtin_cpu_supports("f16c") is GCC-only (clang 14
// rejects the feature name).
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
#endif

bool cpu_has(Isa isa) {
#if FASA_X86
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma") && has_f16c();
  }
  return false;
#else
  return isa == Isa::Scalar;
#endif
}

Isa choose() {
  const std::vector<Isa> avail = available_isas();
  const char* env = std::getenv("FASA_ISA");
  if (env == nullptr || *env == '\0') return avail.back();
  const Isa want = parse_isa(env);
  for (Isa a : avail) {
    if (a == want) return want;
  }
  throw Error(fmt::format("FASA_ISA={}: this CPU or build does not support it (best here: {})", env,
                          isa_name(avail.back())));
}

std::atomic<int> g_active{-1};

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  for (Isa a : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (name == isa_name(a)) return a;
  }
  throw Error(fmt::format("unknown instruction set '{}' (choose scalar, avx2 or avx512)", name));
}

std::vector<Isa> available_isas() {
  std::vector<Isa> v;
  for (Isa a : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (cpu_has(a)) v.push_back(a);
  }
  return v;
}

Isa active_isa() {
  int a = g_active.load(std::memory_order_relaxed);
  if (a < 0) {
    a = static_cast<int>(choose());
    g_active.store(a, std::memory_order_relaxed);
  }
  return static_cast<Isa>(a);
}

void set_active_isa(Isa isa) {
  for (Isa a : available_isas()) {
    if (a == isa) {
      g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
      return;
    }
  }
  throw Error(
      fmt::format("instruction set {} is not available on this CPU or build", isa_name(isa)));
}

}  // namespace fasa
