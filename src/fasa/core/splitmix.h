// SplitMix64 (Steele, Lea and Flood 2014): a tiny seeded generator and 64-bit mixer, for the
// random fills of synthetic models and caches (not for anything that needs statistical quality
// beyond that).
#pragma once

#include <cstdint>

namespace fasa {

// Advances `state` and returns the next value.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The value a generator seeded with x returns first: a mix of x.
inline uint64_t splitmix64_mix(uint64_t x) { return splitmix64(x); }

}  // namespace fasa
