// The packed slice TIP reads (packed_slice.h): the low-bit stores' codes are a function of the
// slots' values however they arrive, within half a step of them, rebuilt from the cache after a
// rollback; one slot's score is the tiles' bits; and `slice=` on fasa and double-sparsity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/attention/policies/packed_slice.h"
#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/expect_error.h"
#include "support/random_calibration.h"
#include "support/tiny_calibration.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

const AttnShape kOne{1, 2, 1, 16, {}};  // n_layers, n_heads, n_kv_heads, head_dim
const std::vector<int> kDims = {0, 3, 5, 8, 9, 15};

// Dim d of slot t, seeded: magnitudes differ from dim to dim (1, 10, 100), as RoPE'd keys do.
float value(uint32_t seed, int t, int d) {
  std::mt19937 rng(seed * 100003u + static_cast<uint32_t>(t) * 131u + static_cast<uint32_t>(d));
  std::normal_distribution<float> nd;
  return nd(rng) * std::pow(10.0f, static_cast<float>(d % 3));
}

// Writes slots [first, first + n) of a one-layer cache with value(seed, ...).
void fill(KvCache& c, int first, int n, uint32_t seed) {
  std::vector<float> k(kOne.head_dim), v(kOne.head_dim, 0.5f);
  for (int t = first; t < first + n; ++t) {
    for (int d = 0; d < kOne.head_dim; ++d) k[d] = value(seed, t, d);
    c.store(0, 0, t, k.data(), v.data());
  }
}

size_t code_bytes(const PackedSlice& s, SliceStore store) {
  const size_t cap = s.view().capacity, w = kDims.size();
  return store == SliceStore::Q4Block ? w * cap / 2 : w * cap;
}

bool same_slice(const PackedSlice& a, const PackedSlice& b, SliceStore store) {
  const SliceView x = a.view(), y = b.view();
  const size_t nb = x.capacity / kTipBlock * kDims.size();
  return x.capacity == y.capacity && std::memcmp(x.codes, y.codes, code_bytes(a, store)) == 0 &&
         std::memcmp(x.scale, y.scale, nb * sizeof(uint16_t)) == 0;
}

const SliceStore kBlocked[] = {SliceStore::Q8Block, SliceStore::Q4Block};

TEST(PackedSlice, BlockCodesAreAFunctionOfTheValues) {
  const int n = 90, cap = 100;
  KvCache cache(kOne, KvType::F32, cap);
  fill(cache, 0, n, 1);
  for (SliceStore store : kBlocked) {
    PackedSlice whole, chunks, singles;
    for (PackedSlice* s : {&whole, &chunks, &singles}) s->reset(store, kDims, cap);
    whole.append(cache, 0, 0, 0, n);
    for (int t = 0; t < n; t += 7) chunks.append(cache, 0, 0, t, std::min(7, n - t));
    for (int t = 0; t < n; ++t) singles.append(cache, 0, 0, t, 1);
    EXPECT_TRUE(same_slice(whole, chunks, store));
    EXPECT_TRUE(same_slice(whole, singles, store));
    EXPECT_EQ(whole.view().capacity, 128u);  // whole blocks
  }
}

// Every code times its (column, block) scale is within half a step of the value, the scale is
// the block's largest |value| over the largest code, and q4 codes stay in [-7, 7].
TEST(PackedSlice, CodesWithinHalfAStepOfTheValues) {
  const int n = 77, cap = 80;
  KvCache cache(kOne, KvType::F32, cap);
  fill(cache, 0, n, 2);
  for (SliceStore store : kBlocked) {
    PackedSlice s;
    s.reset(store, kDims, cap);
    s.append(cache, 0, 0, 0, n);
    const SliceView v = s.view();
    const size_t nb = v.capacity / kTipBlock;
    const float qmax = store == SliceStore::Q8Block ? 127.0f : 7.0f;
    for (size_t i = 0; i < kDims.size(); ++i) {
      for (size_t b = 0; b * kTipBlock < static_cast<size_t>(n); ++b) {
        float amax = 0.0f;
        for (int t = b * kTipBlock; t < std::min<int>(n, (b + 1) * kTipBlock); ++t) {
          amax = std::max(amax, std::fabs(value(2, t, kDims[i])));
        }
        const float d = fp16_to_fp32(v.scale[i * nb + b]);
        EXPECT_EQ(v.scale[i * nb + b], fp32_to_fp16(amax / qmax));
        for (int t = b * kTipBlock; t < std::min<int>(n, (b + 1) * kTipBlock); ++t) {
          const int code = store == SliceStore::Q8Block
                               ? static_cast<int8_t>(v.codes[i * v.capacity + t])
                               : q4b_code(v.codes + i * nb * kTipBlock / 2, t);
          EXPECT_LE(std::abs(code), static_cast<int>(qmax));
          EXPECT_LE(std::fabs(code * d - value(2, t, kDims[i])), 0.5f * d * 1.001f + 1e-6f)
              << "store " << static_cast<int>(store) << " dim " << kDims[i] << " slot " << t;
        }
      }
    }
  }
}

// After a rollback the slots are written again: the slice then equals one built from the
// rewritten cache in one go, whether the rollback stays in the open block or crosses blocks.
TEST(PackedSlice, RollbackRebuildsFromTheCache) {
  const int cap = 100;
  for (SliceStore store : kBlocked) {
    for (const auto& [first, cut] : std::vector<std::pair<int, int>>{{70, 20}, {45, 40}}) {
      KvCache cache(kOne, KvType::F32, cap);
      fill(cache, 0, first, 3);
      PackedSlice s;
      s.reset(store, kDims, cap);
      s.append(cache, 0, 0, 0, first);
      fill(cache, cut, 60 - cut + 10, 4);  // slots [cut, 70) rewritten
      s.append(cache, 0, 0, cut, 70 - cut);
      PackedSlice fresh;
      fresh.reset(store, kDims, cap);
      fresh.append(cache, 0, 0, 0, 70);
      EXPECT_TRUE(same_slice(s, fresh, store)) << first << " -> " << cut;
    }
  }
}

// A block's earlier slots read back from an evicted cache: kept slots' values, freed ones 0.
TEST(PackedSlice, EvictedSlotsReadAsZero) {
  const int cap = 64;
  KvCache cache(kOne, KvType::F32, cap), zeroed(kOne, KvType::F32, cap);
  fill(cache, 0, 50, 5);
  fill(zeroed, 0, 50, 5);
  std::vector<int32_t> pos(50);
  for (int t = 0; t < 50; ++t) pos[t] = t;
  cache.commit(50, pos.data());
  std::vector<int32_t> kept;
  std::vector<float> zero(kOne.head_dim, 0.0f);
  for (int t = 0; t < 40; ++t) {
    if (t % 3 == 0) {
      kept.push_back(t);
    } else {
      zeroed.store(0, 0, t, zero.data(), zero.data());
    }
  }
  ASSERT_TRUE(cache.evict(0, 0, kept, 40, true));
  for (SliceStore store : kBlocked) {
    PackedSlice a, b;
    a.reset(store, kDims, cap);
    b.reset(store, kDims, cap);
    a.append(cache, 0, 0, 45, 5);  // reads slots [32, 45) back
    b.append(zeroed, 0, 0, 45, 5);
    const SliceView x = a.view(), y = b.view();
    const TipTerm terms[] = {{0, 1.0f}, {2, -0.5f}, {5, 0.25f}};
    std::vector<float> sx(kTipBlock), sy(kTipBlock);
    slice_tip(x, terms, 3, kTipBlock, 50 - kTipBlock, sx.data());
    slice_tip(y, terms, 3, kTipBlock, 50 - kTipBlock, sy.data());
    for (int t = 0; t < 50 - kTipBlock; ++t) EXPECT_EQ(sx[t], sy[t]) << t;
  }
}

// slice_tip_one is slice_tip's bits for every store, at every slot.
TEST(PackedSlice, OneSlotEqualsTheTiles) {
  const int n = 70, cap = 80;
  const TipTerm terms[] = {{1, 0.3f}, {0, -1.5f}, {4, 2.0f}, {1, 0.7f}};
  for (KvType type : {KvType::F16, KvType::F32}) {
    KvCache cache(kOne, type, cap);
    fill(cache, 0, n, 6);
    std::vector<SliceStore> stores = {SliceStore::F16, SliceStore::Q8Block, SliceStore::Q4Block};
    if (type == KvType::F32) stores.push_back(SliceStore::F32);
    for (SliceStore store : stores) {
      PackedSlice s;
      s.reset(store, kDims, cap);
      s.append(cache, 0, 0, 0, n);
      std::vector<float> all(n);
      slice_tip(s.view(), terms, 4, 0, n, all.data());
      for (int t = 0; t < n; ++t) {
        EXPECT_EQ(slice_tip_one(s.view(), terms, 4, t), all[t]) << static_cast<int>(store);
      }
    }
  }
}

TEST(PackedSlice, BytesPerSlot) {
  EXPECT_EQ(slice_bytes(SliceStore::F16, 32, 100), 6400u);
  EXPECT_EQ(slice_bytes(SliceStore::F32, 32, 100), 12800u);
  EXPECT_EQ(slice_bytes(SliceStore::Q8Slot, 32, 100), 3400u);
  EXPECT_EQ(slice_bytes(SliceStore::Q8Block, 32, 100), 32u * (100 + 2 * 4));
  EXPECT_EQ(slice_bytes(SliceStore::Q4Block, 32, 100), 32u * (50 + 2 * 4));
  EXPECT_EQ(slice_bytes(SliceStore::Q4Block, 32, 0), 0u);
  EXPECT_EQ(slice_store(SliceFormat::Auto, KvType::Q8_0), SliceStore::Q8Slot);
  EXPECT_EQ(slice_store(SliceFormat::Auto, KvType::F32), SliceStore::F32);
  EXPECT_EQ(slice_store(SliceFormat::F16, KvType::F32), SliceStore::F16);
  EXPECT_EQ(parse_slice_format("q4"), SliceFormat::Q4);
  test::expect_error([] { parse_slice_format("q3"); }, "'q3' is not one of auto, f16, q8, q4");
}

// ---- the policies

const AttnShape kShape{2, 4, 2, 16, {}};

PolicyContext context() {
  PolicyContext ctx;
  ctx.shape = kShape;
  ctx.arch = "llama";
  ctx.rope_dim = kShape.head_dim;
  ctx.model_sha256 = [] { return std::string("slice-test-model"); };
  return ctx;
}

// A calibration of kShape with random agreements and channel importance.
const std::string& calib_path() {
  static const std::string path =
      test::write_random_calibration(kShape, "slice-test-model", "slice_test_calib", true);
  return path;
}

std::unique_ptr<AttentionPolicy> policy(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  return make_policy(name, context(), opts);
}

// n slots of keys whose dims differ in magnitude, and a query per head.
struct Keys {
  KvCache cache;
  std::vector<float> q;  // [n_heads, head_dim]
  explicit Keys(int n) : cache(kShape, KvType::F16, n) {
    std::mt19937 rng(9);
    std::normal_distribution<float> nd;
    std::vector<float> k(kShape.head_dim), v(kShape.head_dim);
    std::vector<int32_t> pos(n);
    for (int t = 0; t < n; ++t) {
      pos[t] = t;
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          for (int d = 0; d < kShape.head_dim; ++d) k[d] = nd(rng) * (1.0f + 3.0f * (d % 4));
          for (auto& x : v) x = nd(rng);
          cache.store(l, g, t, k.data(), v.data());
        }
      }
    }
    cache.commit(n, pos.data());
    q.resize(kShape.n_heads * kShape.head_dim);
    for (auto& x : q) x = nd(rng);
  }
  AttnQuery query(int layer, int g) const {
    AttnQuery a;
    a.layer = layer;
    a.kv_head = g;
    a.q = q.data() + g * kShape.n_group() * kShape.head_dim;
    a.n_group = kShape.n_group();
    a.pos = cache.n_used();
    a.n_visible = cache.n_used();
    a.cache = &cache;
    return a;
  }
};

// The low-bit slices select nearly what the f16 slice selects, read the bytes their store
// says, and the staged layer path and the candidates path equal group by group for them too.
TEST(FasaSlice, LowBitSelectionsTrackTheF16Slice) {
  const int n = 5000, budget = 300;
  const Keys keys(n);
  const std::string base =
      "fasa:mean_value=off,fcs=calibrated,fc_sets=head,dense_layers=none,"
      "calib=" +
      calib_path() + ",budget=" + std::to_string(budget);
  std::vector<std::vector<int32_t>> f16;  // [layer * kv] the f16 slice's selections
  std::vector<uint64_t> f16_bytes;        // [layer * kv] and bytes read
  for (const char* slice : {"f16", "q8", "q4"}) {
    auto p = policy(base + ",slice=" + slice);
    for (int l = 0; l < kShape.n_layers; ++l) p->on_append(keys.cache, l, 0, n);
    double recall = 0.0;
    for (int l = 0; l < kShape.n_layers; ++l) {
      std::vector<AttnQuery> qs;
      for (int g = 0; g < kShape.n_kv_heads; ++g) qs.push_back(keys.query(l, g));
      std::vector<Selection> layer(kShape.n_kv_heads);
      p->select_layer(qs.data(), kShape.n_kv_heads, layer.data());
      for (int g = 0; g < kShape.n_kv_heads; ++g) {
        Selection one;
        p->select(qs[g], one);
        ASSERT_FALSE(one.all);
        EXPECT_EQ(one.slots, layer[g].slots) << slice;  // staged == group by group
        EXPECT_EQ(one.bytes_read, layer[g].bytes_read) << slice;
        // Every visible slot as candidates (pyramidkv+fasa's path, which scores a blocked
        // store slot by slot): the same selection.
        std::vector<int32_t> every(n);
        std::iota(every.begin(), every.end(), 0);
        AttnQuery qa = qs[g];
        qa.candidates = every.data();
        qa.n_candidates = n;
        Selection cand;
        p->select(qa, cand);
        EXPECT_EQ(cand.slots, one.slots) << slice;
        if (std::string(slice) == "f16") {
          f16.push_back(one.slots);
          f16_bytes.push_back(one.bytes_read);
          continue;
        }
        const std::vector<int32_t>& want = f16[l * kShape.n_kv_heads + g];
        std::vector<int32_t> both;
        std::set_intersection(one.slots.begin(), one.slots.end(), want.begin(), want.end(),
                              std::back_inserter(both));
        recall += static_cast<double>(both.size()) / budget;
        // The same w columns of n slots in the store's bytes.
        const SliceStore store =
            std::string(slice) == "q8" ? SliceStore::Q8Block : SliceStore::Q4Block;
        EXPECT_EQ(one.bytes_read * slice_bytes(SliceStore::F16, 1, n),
                  f16_bytes[l * kShape.n_kv_heads + g] * slice_bytes(store, 1, n));
      }
    }
    recall /= kShape.n_layers * kShape.n_kv_heads;
    if (std::string(slice) == "f16") continue;
    std::printf("[slice] %s: recall of the f16 slice's selection %.3f\n", slice, recall);
    EXPECT_GE(recall, std::string(slice) == "q8" ? 0.97 : 0.8) << slice;
  }
}

// A policy that meets a cache of another capacity packs its slices afresh for it: the same
// selections as a policy that only saw that cache.
TEST(FasaSlice, AnotherCacheCapacityRepacks) {
  const Keys small(2000), large(5000);
  const std::string spec =
      "fasa:mean_value=off,fcs=calibrated,fc_sets=head,dense_layers=none,"
      "calib=" +
      calib_path() + ",budget=300,slice=q4";
  auto moved = policy(spec), fresh = policy(spec);
  for (int l = 0; l < kShape.n_layers; ++l) {
    moved->on_append(small.cache, l, 0, 2000);
    moved->on_append(large.cache, l, 0, 5000);
    fresh->on_append(large.cache, l, 0, 5000);
  }
  for (int l = 0; l < kShape.n_layers; ++l) {
    for (int g = 0; g < kShape.n_kv_heads; ++g) {
      Selection a, b;
      moved->select(large.query(l, g), a);
      fresh->select(large.query(l, g), b);
      EXPECT_EQ(a.slots, b.slots) << l << " " << g;
    }
  }
}

TEST(FasaSlice, BadOptionsAreClearErrors) {
  const std::string c = "fasa:calib=" + calib_path() + ",budget=8";
  test::expect_error([&] { policy(c + ",slice=q3"); }, "slice");
  EXPECT_NO_THROW(policy(c + ",fcs=calibrated,slice=q4,variant=m"));  // whole rows on file
  EXPECT_NO_THROW(policy("double-sparsity:calib=" + calib_path() + ",budget=8,slice=q4"));
  EXPECT_NO_THROW(policy(c + ",fcs=calibrated,variant=m,slice=auto"));
}

// A session with a low-bit slice: decode after a prefill in chunks of 16 equals decode after
// chunks of 5 (a block's codes depend on its slots' values only, not on how they arrived).
TEST(FasaSlice, SessionsWithALowBitSlice) {
  const std::string path = ::testing::TempDir() + "/slice_tiny.gguf";
  test::TinySpec spec;
  spec.n_layers = 2;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  const std::string calib = test::calibrate_tiny(model, "slice_tiny_calib.json");
  std::mt19937 rng(31);
  std::vector<int32_t> tokens(90);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 60);
  // Prefill in chunks, then decode the rest: every decode step's logits.
  auto run = [&](const std::string& policy, int chunk) {
    SessionOptions so;
    so.n_ctx = 128;
    so.policy = policy;
    so.prefill_chunk = chunk;
    Session s(model, so);
    s.prefill(prompt);
    std::vector<float> out;
    for (size_t i = prompt.size(); i < tokens.size(); ++i) {
      const auto& l = s.decode(tokens[i]);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  };
  const std::string common = std::string("fcs=calibrated,fc_sets=head,calib=") + calib +
                             ",budget=20,dense_layers=none,break_even=off,slice=";
  for (const char* slice : {"q8", "q4"}) {
    const std::vector<float> want = run("fasa:" + common + slice, 16);
    EXPECT_EQ(run("fasa:" + common + slice, 5), want) << slice;
    EXPECT_NE(run("fasa:" + common + "f16", 16), want) << slice;  // the slice is used
  }
}

}  // namespace
}  // namespace fasa
