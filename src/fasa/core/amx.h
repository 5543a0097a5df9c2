// Intel AMX (Advanced Matrix Extensions) for the batched integer matmuls (kernels/matmul_amx.h).
//
// AMX is used when all of these hold, checked once per process (thread-safe):
//   - the CPU has AMX-TILE and AMX-INT8 (cpuid leaf 7: EDX bits 24 and 25) and the OS enabled
//     tile state in XCR0 (bits 17 TILECFG and 18 TILEDATA);
//   - Linux granted this process the tile data state: arch_prctl(ARCH_REQ_XCOMP_PERM,
//     XFEATURE_XTILEDATA) (kernel 5.16+; without it the first tile instruction faults);
//   - the active instruction set is avx512 (AMX kernels live in that set only);
//   - FASA_NO_AMX is unset, empty or "0", and set_amx_enabled(false) was not called.
// Otherwise the VNNI / AVX2 / portable paths run, and amx_status() says why.
#pragma once

#include <string>

namespace fasa {

// Whether the CPU and OS allow AMX int8 in this process (asks the kernel once, on first call).
bool amx_supported();
// Whether the matmuls use AMX now (amx_supported() and nothing above switches it off).
bool amx_active();
// "on", or "off (<reason>)": for `fasa inspect` / `fasa bench`.
std::string amx_status();
// Forces AMX off (false) or back to the default (true) for this process: tests, benchmarks, a
// CLI flag. Enabling never overrides FASA_NO_AMX or a missing CPU/OS capability.
void set_amx_enabled(bool enabled);

}  // namespace fasa
