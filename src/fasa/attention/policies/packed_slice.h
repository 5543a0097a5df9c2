// The packed slice TIP reads (ChannelSubsetPolicy, channel_subset.h): for one kv head, its
// scoring key dims of every slot, column-major (column i = dim dims[i] of every slot), so TIP
// streams whole cache lines of consecutive slots. How the values are stored (`slice=`):
//   auto: the cache's own values (f16, f32; a q8_0 cache's int8 codes with one fp16 scale per
//     slot, kv_cache.h pack_hot_q8): the slice reads what dense attention would.
//   f16: fp16 values whatever the cache's type.
//   q8, q4: int8 / int4 codes in blocks of kTipBlock slots with one fp16 scale per (column,
//     block), symmetric (scale = the block's max |value| / 127 or / 7, codes rounded to nearest):
//     a column's own scale, since RoPE'd keys differ in magnitude from dim to dim far more than
//     from token to token. A block's codes are a function of its slots' values: in the open (last)
//     block, a column is quantized again whenever a joining slot raises its largest |value|
//     (else only the new slots are), so its scale stays its own maximum.
// Bytes per slot of a w-dim slice: f16 2w, f32 4w, q8_0 w + 2, q8 w (1 + 1/16), q4 w (1/2 + 1/16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/kernels/tip.h"

namespace fasa {

// The `slice=` option.
enum class SliceFormat { Auto, F16, Q8, Q4 };
// "auto" | "f16" | "q8" | "q4"; throws fasa::Error otherwise.
SliceFormat parse_slice_format(const std::string& s);
const char* slice_format_name(SliceFormat f);

// How a slice holds its values, once the cache's type is known.
enum class SliceStore { F16, F32, Q8Slot, Q8Block, Q4Block };
SliceStore slice_store(SliceFormat f, KvType cache);
bool blocked(SliceStore s);
// Bytes of n slots of a w-dim slice (blocked stores: whole blocks of scales, codes of n slots).
uint64_t slice_bytes(SliceStore s, size_t w, int64_t n);

// What TIP reads: the policy's PackedSlice, or FASA-M's RAM tier (F16, F32, Q8Slot).
struct SliceView {
  SliceStore store = SliceStore::F16;
  const uint8_t* codes = nullptr;   // [w, capacity] values or codes (q4: two per byte)
  const uint16_t* scale = nullptr;  // Q8Slot: [capacity]; blocked: [w, capacity / kTipBlock]
  size_t capacity = 0;              // slots per column (blocked: whole blocks)
};

// scores[0, len) = TIP scores of slots [a, a + len) (blocked stores: a a multiple of kTipBlock).
void slice_tip(const SliceView& v, const TipTerm* terms, int n_terms, int a, int len,
               float* scores);
// The TIP score of slot t alone: slice_tip's bits.
float slice_tip_one(const SliceView& v, const TipTerm* terms, int n_terms, int t);

// A slice the policy owns (FASA-C).
class PackedSlice {
 public:
  // Empty, for `dims` of a cache of `capacity` slots.
  void reset(SliceStore store, std::vector<int> dims, int capacity);
  // Packs slots [first, first + n) of (layer, kv_head)'s K rows. Slots below `first` must have
  // been appended (a block's earlier slots are read again from the cache when needed). A layer
  // the cache keeps in its file tier (FASA-M) is read through it.
  void append(const KvCache& cache, int layer, int kv_head, int first, int n);
  SliceView view() const;
  // Whether reset(store, dims, capacity) was the last reset (a policy meeting a cache of another
  // type or capacity resets the slice).
  bool holds(SliceStore store, int capacity) const {
    return !codes_.empty() && store == store_ && capacity_ == padded(store, capacity);
  }

 private:
  // Slots per column for a cache of `capacity` slots (blocked: whole blocks).
  static int padded(SliceStore store, int capacity);
  // K rows [first, first + k.size() / row_bytes) of an offloaded layer, read through the tier.
  struct TierRows {
    int first = 0;
    std::vector<uint8_t> k;  // [rows, row_bytes]
  };
  static void read_tier_rows(const KvCache& cache, int layer, int kv_head, int first, int end,
                             TierRows& out);
  // Dim dims_[i] of slot s's K row (from `tier` when it holds rows), or 0 for a slot whose row
  // was freed (eviction).
  void read_values(const KvCache& cache, int layer, int kv_head, int slot, float* x,
                   const TierRows& tier) const;
  // Column i of the open block: its scale from open_amax_[i], the codes of slots [from, end).
  void quantize_column(size_t i, int from, int end);

  SliceStore store_ = SliceStore::F16;
  std::vector<int> dims_;        // [w] packed K dims
  int capacity_ = 0;             // slots per column (blocked: whole blocks)
  std::vector<uint8_t> codes_;   // [w, capacity] of the store's element (q4: capacity / 2)
  std::vector<uint16_t> scale_;  // Q8Slot: [capacity]; blocked: [w, capacity / kTipBlock]
  std::vector<float> open_;      // blocked: [w, kTipBlock] values of the open block's slots
  int open_block_ = -1;          // the block open_ holds, slots [open_block_ * 32, open_end_)
  int open_end_ = 0;
  std::vector<float> open_amax_;  // blocked: [w] each column's largest |value| in open_
  std::vector<float> x_;          // blocked: [w] scratch, one slot's values
};

}  // namespace fasa
