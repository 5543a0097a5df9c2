// Exact lookup of vocabulary strings: open addressing with linear probing over a flat table that
// keeps each token's 64-bit hash, so a miss rarely touches token text. The SentencePiece merge
// loop asks it about every adjacent pair of symbols, mostly strings that are not tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fasa {

class TokenIndex {
 public:
  // Indexes `texts` (which must outlive the index and not move). Returns -1, or the first id
  // of a text that occurs twice (the duplicate itself is not indexed).
  int32_t build(const std::vector<std::string>* texts);
  int32_t find(std::string_view s) const;  // -1 when absent

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t id = -1;  // -1: empty
  };
  static uint64_t hash_of(std::string_view s);

  const std::vector<std::string>* texts_ = nullptr;
  std::vector<Slot> slots_;  // size: a power of two, at most half full
  uint64_t mask_ = 0;
};

}  // namespace fasa
