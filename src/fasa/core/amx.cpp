#include "fasa/core/amx.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "fasa/core/isa.h"

#if FASA_X86 && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fasa {

namespace {

struct AmxProbe {
  bool ok = false;
  std::string why;  // reason when !ok
};

#if FASA_X86 && defined(__linux__)
constexpr long kArchGetXcompPerm = 0x1022;
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

AmxProbe probe() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return {false, "no cpuid leaf 7"};
  if (((d >> 24) & 1) == 0 || ((d >> 25) & 1) == 0) return {false, "CPU lacks AMX-TILE/AMX-INT8"};
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __get_cpuid(1, &a1, &b1, &c1, &d1);
  if (((c1 >> 27) & 1) == 0) return {false, "OS has not enabled XSAVE"};
  if ((xcr0() & (3u << 17)) != (3u << 17))
    return {false, "OS has not enabled AMX tile state (XCR0)"};
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    return {false, std::string("Linux refused the AMX tile permission (arch_prctl: ") +
                       std::strerror(errno) + ")"};
  }
  unsigned long perm = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &perm) != 0 ||
      ((perm >> kXfeatureXtiledata) & 1) == 0) {
    return {false, "Linux did not grant the AMX tile permission"};
  }
  return {true, ""};
}
#else
AmxProbe probe() { return {false, "not an x86-64 Linux build"}; }
#endif

const AmxProbe& probed() {
  static const AmxProbe p = probe();  // thread-safe, once per process
  return p;
}

bool env_off() {
  const char* e = std::getenv("FASA_NO_AMX");
  return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
}

std::atomic<bool> g_enabled{true};

}  // namespace

bool amx_supported() { return probed().ok; }

bool amx_active() {
  if (!g_enabled.load(std::memory_order_relaxed)) return false;
  return !env_off() && active_isa() == Isa::Avx512 && amx_supported();
}

std::string amx_status() {
  if (!amx_supported()) return "off (" + probed().why + ")";
  if (env_off()) return "off (FASA_NO_AMX)";
  if (active_isa() != Isa::Avx512) return "off (instruction set is not avx512)";
  if (!g_enabled.load(std::memory_order_relaxed)) return "off (disabled)";
  return "on";
}

void set_amx_enabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace fasa
