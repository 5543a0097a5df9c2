// The packed slice TIP reads, in the store `slice=` asks for (packed_slice.h).
#include "fasa/attention/policies/packed_slice.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fasa/attention/kv_tiered_store.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"

namespace fasa {

namespace {

constexpr int kQ4Bytes = kTipBlock / 2;  // bytes of one q4 block of one column

// Largest code magnitude of a blocked store.
int max_code(SliceStore s) { return s == SliceStore::Q8Block ? 127 : 7; }

size_t n_blocks_of(int capacity) { return static_cast<size_t>(capacity) / kTipBlock; }

}  // namespace

SliceFormat parse_slice_format(const std::string& s) {
  if (s == "auto") return SliceFormat::Auto;
  if (s == "f16") return SliceFormat::F16;
  if (s == "q8") return SliceFormat::Q8;
  if (s == "q4") return SliceFormat::Q4;
  fail("slice format '{}' is not one of auto, f16, q8, q4", s);
}

const char* slice_format_name(SliceFormat f) {
  switch (f) {
    case SliceFormat::Auto: return "auto";
    case SliceFormat::F16: return "f16";
    case SliceFormat::Q8: return "q8";
    case SliceFormat::Q4: return "q4";
  }
  return "?";
}

SliceStore slice_store(SliceFormat f, KvType cache) {
  switch (f) {
    case SliceFormat::Auto:
      return cache == KvType::F16   ? SliceStore::F16
             : cache == KvType::F32 ? SliceStore::F32
                                    : SliceStore::Q8Slot;
    case SliceFormat::F16: return SliceStore::F16;
    case SliceFormat::Q8: return SliceStore::Q8Block;
    case SliceFormat::Q4: return SliceStore::Q4Block;
  }
  return SliceStore::F16;
}

bool blocked(SliceStore s) { return s == SliceStore::Q8Block || s == SliceStore::Q4Block; }

uint64_t slice_bytes(SliceStore s, size_t w, int64_t n) {
  if (w == 0 || n <= 0) return 0;
  const auto un = static_cast<uint64_t>(n);
  const uint64_t blocks = (un + kTipBlock - 1) / kTipBlock;
  switch (s) {
    case SliceStore::F16: return un * w * 2;
    case SliceStore::F32: return un * w * 4;
    case SliceStore::Q8Slot: return un * (w + 2);  // the codes and the slot's scale
    case SliceStore::Q8Block: return w * (un + 2 * blocks);
    case SliceStore::Q4Block: return w * ((un + 1) / 2 + 2 * blocks);
  }
  return 0;
}

void slice_tip(const SliceView& v, const TipTerm* terms, int n_terms, int a, int len,
               float* scores) {
  switch (v.store) {
    case SliceStore::F16:
    case SliceStore::F32: {
      const size_t eb = v.store == SliceStore::F16 ? 2 : 4;
      tip_scores(v.codes + static_cast<size_t>(a) * eb, v.store == SliceStore::F16, v.capacity,
                 terms, n_terms, len, scores);
      return;
    }
    case SliceStore::Q8Slot:
      tip_scores_q8(reinterpret_cast<const int8_t*>(v.codes) + a, v.scale + a, v.capacity, terms,
                    n_terms, len, scores);
      return;
    case SliceStore::Q8Block:
    case SliceStore::Q4Block: {
      FASA_CHECK(a % kTipBlock == 0);
      const size_t nb = n_blocks_of(static_cast<int>(v.capacity));
      if (v.store == SliceStore::Q8Block) {
        tip_scores_q8b(reinterpret_cast<const int8_t*>(v.codes), v.scale, nb, terms, n_terms,
                       a / kTipBlock, len, scores);
      } else {
        tip_scores_q4b(v.codes, v.scale, nb, terms, n_terms, a / kTipBlock, len, scores);
      }
      return;
    }
  }
}

float slice_tip_one(const SliceView& v, const TipTerm* terms, int n_terms, int t) {
  if (!blocked(v.store)) {
    float s = 0.0f;
    slice_tip(v, terms, n_terms, t, 1, &s);
    return s;
  }
  // The blocked kernels' sequence for one slot (tip.h): per term, coef * the (column, block)
  // scale rounded to fp32, then one fused multiply-add of the code.
  const size_t nb = n_blocks_of(static_cast<int>(v.capacity));
  const int b = t / kTipBlock;
  float s = 0.0f;
  for (int i = 0; i < n_terms; ++i) {
    const float c = terms[i].coef * fp16_to_fp32(v.scale[terms[i].col * nb + b]);
    const int code =
        v.store == SliceStore::Q8Block
            ? static_cast<int8_t>(v.codes[static_cast<size_t>(terms[i].col) * v.capacity + t])
            : q4b_code(v.codes + static_cast<size_t>(terms[i].col) * nb * kQ4Bytes, t);
    s = std::fma(c, static_cast<float>(code), s);
  }
  return s;
}

void PackedSlice::reset(SliceStore store, std::vector<int> dims, int capacity) {
  store_ = store;
  dims_ = std::move(dims);
  capacity_ = padded(store, capacity);
  const size_t w = dims_.size(), cap = capacity_;
  switch (store) {
    case SliceStore::F16: codes_.assign(w * cap * 2, 0); break;
    case SliceStore::F32: codes_.assign(w * cap * 4, 0); break;
    case SliceStore::Q8Slot:
      codes_.assign(w * cap, 0);
      scale_.assign(cap, 0);
      break;
    case SliceStore::Q8Block:
    case SliceStore::Q4Block:
      // q4: every nibble 8, code 0
      codes_.assign(store == SliceStore::Q8Block ? w * cap : w * cap / 2,
                    store == SliceStore::Q8Block ? 0 : 0x88);
      scale_.assign(w * n_blocks_of(capacity_), 0);
      open_.assign(w * kTipBlock, 0.0f);
      open_amax_.assign(w, 0.0f);
      x_.assign(w, 0.0f);
      break;
  }
  open_block_ = -1;
  open_end_ = 0;
}

int PackedSlice::padded(SliceStore store, int capacity) {
  return blocked(store) ? (capacity + kTipBlock - 1) / kTipBlock * kTipBlock : capacity;
}

SliceView PackedSlice::view() const {
  return SliceView{store_, codes_.data(), scale_.empty() ? nullptr : scale_.data(),
                   static_cast<size_t>(capacity_)};
}

void PackedSlice::read_values(const KvCache& cache, int layer, int kv_head, int slot, float* x,
                              const TierRows& tier) const {
  if (!tier.k.empty()) {  // an offloaded layer: the rows read through the file tier
    const uint8_t* k = tier.k.data() + static_cast<size_t>(slot - tier.first) * cache.row_bytes();
    for (size_t i = 0; i < dims_.size(); ++i) x[i] = kv_value(k, cache.type(), dims_[i]);
    return;
  }
  int32_t row = slot;
  if (cache.evicted(layer, kv_head) && slot < cache.evict_horizon(layer, kv_head)) {
    const std::vector<int32_t>& kept = cache.kept(layer, kv_head);
    const auto it = std::lower_bound(kept.begin(), kept.end(), slot);
    if (it == kept.end() || *it != slot) {  // freed: scores nothing, never selected again
      std::fill(x, x + dims_.size(), 0.0f);
      return;
    }
    row = static_cast<int32_t>(it - kept.begin());
  }
  const auto* k = static_cast<const uint8_t*>(cache.k_rows(layer, kv_head)) +
                  static_cast<size_t>(row) * cache.row_bytes();
  for (size_t i = 0; i < dims_.size(); ++i) x[i] = kv_value(k, cache.type(), dims_[i]);
}

void PackedSlice::quantize_column(size_t i, int from, int end) {
  const size_t nb = n_blocks_of(capacity_);
  const int b = open_block_, qmax = max_code(store_);
  const float* x = open_.data() + i * kTipBlock;  // [kTipBlock] column i's values
  const uint16_t dh = fp32_to_fp16(open_amax_[i] / static_cast<float>(qmax));
  scale_[i * nb + b] = dh;
  const float d = fp16_to_fp32(dh);
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  for (int j = from - b * kTipBlock; j < end - b * kTipBlock; ++j) {
    const int q = std::clamp(static_cast<int>(std::lround(x[j] * id)), -qmax, qmax);
    if (store_ == SliceStore::Q8Block) {
      codes_[i * capacity_ + b * kTipBlock + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
      continue;
    }
    uint8_t& byte = codes_[(i * nb + b) * kQ4Bytes + j % kQ4Bytes];
    const auto nib = static_cast<uint8_t>(q + 8);
    byte = j < kQ4Bytes ? static_cast<uint8_t>((byte & 0xF0) | nib)
                        : static_cast<uint8_t>((byte & 0x0F) | (nib << 4));
  }
}

void PackedSlice::read_tier_rows(const KvCache& cache, int layer, int kv_head, int first, int end,
                                 TierRows& out) {
  const int m = end - first;
  const size_t rb = cache.row_bytes();
  std::vector<int32_t> slots(m);
  for (int j = 0; j < m; ++j) slots[j] = first + j;
  out.first = first;
  out.k.resize(static_cast<size_t>(m) * rb);
  std::vector<uint8_t> v(static_cast<size_t>(m) * rb);  // [m] V rows (not needed)
  cache.gather(layer, kv_head, slots.data(), m, out.k.data(), v.data());
  cache.check_io();
}

void PackedSlice::append(const KvCache& cache, int layer, int kv_head, int first, int n) {
  const size_t w = dims_.size(), cap = capacity_;
  FASA_CHECK(first >= 0 && first + n <= capacity_);
  // FASA-M with a slice of its own: the layer's K rows are in the file tier (the new ones still
  // in its RAM tail). Read the new slots' rows, and a blocked store's open block's earlier ones
  // when open_ lacks them (the loop below reads them then).
  TierRows tier;
  if (cache.offloaded(layer)) {
    const int b = first / kTipBlock;
    const bool reopen = blocked(store_) && (open_block_ != b || open_end_ < first);
    read_tier_rows(cache, layer, kv_head, reopen ? b * kTipBlock : first, first + n, tier);
  }
  if (!blocked(store_)) {
    const size_t rb = cache.row_bytes();
    const auto* base = tier.k.empty() ? static_cast<const uint8_t*>(cache.k_rows(layer, kv_head))
                                      : tier.k.data() - static_cast<size_t>(tier.first) * rb;
    for (int s = first; s < first + n; ++s) {
      const uint8_t* row = base + static_cast<size_t>(s) * rb;  // new slots: row = slot
      if (store_ == SliceStore::Q8Slot) {
        FASA_CHECK(cache.type() == KvType::Q8_0);
        pack_hot_q8(row, dims_.data(), static_cast<int>(w),
                    reinterpret_cast<int8_t*>(codes_.data()) + s, cap, scale_.data() + s);
        continue;
      }
      const size_t eb = store_ == SliceStore::F16 ? 2 : 4;
      const KvType own = store_ == SliceStore::F16 ? KvType::F16 : KvType::F32;
      for (size_t i = 0; i < w; ++i) {
        uint8_t* dst = codes_.data() + (i * cap + s) * eb;
        if (cache.type() == own) {
          std::memcpy(dst, row + dims_[i] * eb, eb);  // the cache's own bits
        } else if (own == KvType::F16) {
          const uint16_t h = fp32_to_fp16(kv_value(row, cache.type(), dims_[i]));
          std::memcpy(dst, &h, 2);
        } else {
          FASA_CHECK(false);  // an f32 slice is the f32 cache's own (slice=auto)
        }
      }
    }
    return;
  }
  // Blocked: per block the slots join open_; a column whose largest |value| grew is quantized
  // again whole, else only its new slots (with the scale it has: the same codes either way).
  float* x = x_.data();  // [w] one slot's values
  for (int s = first; s < first + n;) {
    const int b = s / kTipBlock, end = std::min(first + n, (b + 1) * kTipBlock);
    // open_amax_ describes exactly slots [b * kTipBlock, s) only when nothing was rolled back
    const bool fresh = open_block_ != b || open_end_ != s;
    if (open_block_ != b || open_end_ < s) {  // open_ lacks some of the block's earlier slots
      open_block_ = b;
      for (int t = b * kTipBlock; t < s; ++t) {
        read_values(cache, layer, kv_head, t, x, tier);
        for (size_t i = 0; i < w; ++i) open_[i * kTipBlock + t % kTipBlock] = x[i];
      }
    }
    for (int t = s; t < end; ++t) {
      read_values(cache, layer, kv_head, t, x, tier);
      for (size_t i = 0; i < w; ++i) open_[i * kTipBlock + t % kTipBlock] = x[i];
    }
    for (size_t i = 0; i < w; ++i) {
      const float* col = open_.data() + i * kTipBlock;
      float old = fresh ? 0.0f : open_amax_[i];
      for (int t = b * kTipBlock; fresh && t < s; ++t) {
        old = std::max(old, std::fabs(col[t % kTipBlock]));
      }
      float now = old;
      for (int t = s; t < end; ++t) now = std::max(now, std::fabs(col[t % kTipBlock]));
      open_amax_[i] = now;
      quantize_column(i, fresh || now != old ? b * kTipBlock : s, end);
    }
    open_end_ = end;
    s = end;
  }
}

}  // namespace fasa
