#include "fasa/attention/attention.h"

#include <cmath>
#include <vector>

#include "fasa/attention/attend.h"
#include "fasa/core/parallel.h"

namespace fasa {

namespace {

std::vector<float>& probs_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf;
}

KvRows rows_of(const KvCache& cache, int layer, int kv_head) {
  return KvRows{cache.k_rows(layer, kv_head), cache.v_rows(layer, kv_head), cache.type(),
                cache.shape().head_dim};
}

// Rows fetched from an offloaded layer, contiguous: [n, head_dim] K and V of the cache's type.
struct Gathered {
  std::vector<uint8_t> k, v;
  KvRows fetch(const KvCache& cache, int layer, int kv_head, const int32_t* slots, int n) {
    const size_t bytes = static_cast<size_t>(n) * cache.shape().head_dim * cache.elem_bytes();
    k.resize(bytes);
    v.resize(bytes);
    cache.gather(layer, kv_head, slots, n, k.data(), v.data());
    return KvRows{k.data(), v.data(), cache.type(), cache.shape().head_dim};
  }
};

// One Gathered per kv head, owned by the calling thread (workers index into it).
std::vector<Gathered>& gathered_per_kv(int n_kv) {
  thread_local std::vector<Gathered> g;
  if (static_cast<int>(g.size()) < n_kv) g.resize(n_kv);
  return g;
}

void decode_step(const AttnStep& s, const KvCache& cache, AttentionPolicy& policy,
                 AttnStats* stats) {
  const AttnShape& sh = cache.shape();
  const int hd = sh.head_dim, n_group = sh.n_group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int n_visible = s.first_slot + 1;
  // An offloaded layer (FASA-M) fetches the selected rows from its file tier: once per kv head
  // for a shared selection, per query head otherwise; attention then reads them contiguously.
  const bool offloaded = cache.offloaded(s.layer);
  const TierStats tier_before = offloaded ? cache.tier_stats() : TierStats{};
  std::vector<Gathered>& fetched = gathered_per_kv(sh.n_kv_heads);
  std::vector<KvRows> kv_rows(sh.n_kv_heads);
  std::vector<Selection> sel(sh.n_kv_heads);
  parallel_for(sh.n_kv_heads, [&](int64_t g) {
    AttnQuery q;
    q.layer = s.layer;
    q.kv_head = static_cast<int>(g);
    q.q = s.q + g * n_group * hd;
    q.n_group = n_group;
    q.pos = s.pos[0];
    q.n_visible = n_visible;
    q.cache = &cache;
    policy.select(q, sel[g]);
    const Selection& se = sel[g];
    if (!offloaded) {
      kv_rows[g] = rows_of(cache, s.layer, static_cast<int>(g));
    } else if (!se.per_head) {
      kv_rows[g] = fetched[g].fetch(cache, s.layer, static_cast<int>(g),
                                    se.all ? nullptr : se.slots.data(),
                                    se.all ? n_visible : static_cast<int>(se.slots.size()));
    }
  });
  const bool want_probs = policy.wants_probs();
  std::vector<float> all_probs;  // [n_heads, n_visible] when the policy learns from them
  if (want_probs) all_probs.resize(static_cast<size_t>(sh.n_heads) * n_visible);
  auto slots_of = [&](int h) -> const std::vector<int32_t>& {
    return sel[h / n_group].slots_for(h % n_group);
  };
  parallel_for(sh.n_heads, [&](int64_t h) {
    const int kv = static_cast<int>(h) / n_group;
    const bool all = sel[kv].all;
    const std::vector<int32_t>& slots = slots_of(static_cast<int>(h));
    const int n = all ? n_visible : static_cast<int>(slots.size());
    float* probs = want_probs ? all_probs.data() + h * n_visible : probs_scratch(n).data();
    const int32_t* list = all || offloaded ? nullptr : slots.data();
    KvRows rows = kv_rows[kv];
    if (offloaded && sel[kv].per_head) {
      thread_local Gathered mine;
      rows = mine.fetch(cache, s.layer, kv, slots.data(), n);
    }
    attend_one(s.q + h * hd, rows, list, n, scale, probs, s.out + h * hd);
  });
  cache.check_io();
  if (want_probs) {
    for (int h = 0; h < sh.n_heads; ++h) {
      const Selection& se = sel[h / n_group];
      const int n = se.all ? n_visible : static_cast<int>(slots_of(h).size());
      policy.on_probs(s.layer, h, se, all_probs.data() + static_cast<size_t>(h) * n_visible, n);
    }
  }
  if (stats) {
    const uint64_t row_bytes = 2ull * hd * cache.elem_bytes();  // one K row and one V row
    if (s.layer == 0) stats->decode_tokens += 1;
    for (int h = 0; h < sh.n_heads; ++h) {
      const Selection& se = sel[h / n_group];
      const uint64_t rows = se.all ? n_visible : slots_of(h).size();
      stats->decode_steps += 1;
      stats->slots_read += rows;
      stats->slots_visible += n_visible;
      if (se.per_head || h % n_group == 0) stats->attend_bytes += rows * row_bytes;
    }
    for (const Selection& se : sel) {
      stats->select_bytes += se.bytes_read;
      stats->dense_bytes += static_cast<uint64_t>(n_visible) * row_bytes;
    }
    if (offloaded) {
      const TierStats d = cache.tier_stats() - tier_before;
      stats->tier_reads += d.reads;
      stats->tier_read_bytes += d.read_bytes;
      stats->tier_read_ns += d.read_ns;
    }
  }
}

}  // namespace

void attention_forward(const AttnStep& s, const KvCache& cache, AttentionPolicy& policy,
                       AttnStats* stats) {
  if (s.n_tok == 1) {
    decode_step(s, cache, policy, stats);
    return;
  }
  // Dense causal prefill: token t reads slots [0, first_slot + t].
  const AttnShape& sh = cache.shape();
  const int hd = sh.head_dim, n_group = sh.n_group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<KvRows> kv_rows(sh.n_kv_heads);
  if (cache.offloaded(s.layer)) {  // FASA-M: every visible row comes back from the file tier
    std::vector<Gathered>& fetched = gathered_per_kv(sh.n_kv_heads);
    parallel_for(sh.n_kv_heads, [&](int64_t g) {
      kv_rows[g] = fetched[g].fetch(cache, s.layer, static_cast<int>(g), nullptr,
                                    s.first_slot + s.n_tok);
    });
    cache.check_io();
  } else {
    for (int g = 0; g < sh.n_kv_heads; ++g) kv_rows[g] = rows_of(cache, s.layer, g);
  }
  parallel_for(int64_t{s.n_tok} * sh.n_heads, [&](int64_t i) {
    const int t = static_cast<int>(i / sh.n_heads), h = static_cast<int>(i % sh.n_heads);
    const int n = s.first_slot + t + 1;
    const size_t off = (static_cast<size_t>(t) * sh.n_heads + h) * hd;
    attend_one(s.q + off, kv_rows[h / n_group], nullptr, n, scale, probs_scratch(n).data(),
               s.out + off);
  });
}

}  // namespace fasa
