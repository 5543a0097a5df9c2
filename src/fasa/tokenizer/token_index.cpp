// Flat open-addressing index of vocabulary strings.
#include "fasa/tokenizer/token_index.h"

#include <cstring>

namespace fasa {

uint64_t TokenIndex::hash_of(std::string_view s) {
  // FNV-1a over 8-byte words, then a final avalanche (tokens are short; this is not a MAC).
  uint64_t h = 0xCBF29CE484222325ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, sizeof(w));
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001B3ull;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

int32_t TokenIndex::build(const std::vector<std::string>* texts) {
  texts_ = texts;
  size_t n_slots = 16;
  while (n_slots < 2 * texts->size()) n_slots *= 2;
  slots_.assign(n_slots, Slot{});
  mask_ = n_slots - 1;
  for (size_t i = 0; i < texts->size(); ++i) {
    const std::string& t = (*texts)[i];
    const uint64_t h = hash_of(t);
    for (uint64_t k = h & mask_;; k = (k + 1) & mask_) {
      Slot& slot = slots_[k];
      if (slot.id < 0) {
        slot = {h, static_cast<int32_t>(i)};
        break;
      }
      if (slot.hash == h && (*texts_)[static_cast<size_t>(slot.id)] == t) return slot.id;
    }
  }
  return -1;
}

int32_t TokenIndex::find(std::string_view s) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_of(s);
  for (uint64_t k = h & mask_;; k = (k + 1) & mask_) {
    const Slot& slot = slots_[k];
    if (slot.id < 0) return -1;
    if (slot.hash == h && (*texts_)[static_cast<size_t>(slot.id)] == s) return slot.id;
  }
}

}  // namespace fasa
