#include "fasa/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/attend.h"

namespace fasa {

namespace {

KvRows rows_of(const KvCache& cache, int layer, int kv_head) {
  return KvRows{cache.k_rows(layer, kv_head), cache.v_rows(layer, kv_head), cache.type(),
                cache.shape().head_dim};
}

// Rows fetched from an offloaded layer, contiguous: [n, head_dim] K and V of the cache's type.
struct Gathered {
  std::vector<uint8_t> k, v;
  KvRows fetch(const KvCache& cache, int layer, int kv_head, const int32_t* slots, int n) {
    const size_t bytes = static_cast<size_t>(n) * cache.row_bytes();
    k.resize(bytes);
    v.resize(bytes);
    cache.gather(layer, kv_head, slots, n, k.data(), v.data());
    return KvRows{k.data(), v.data(), cache.type(), cache.shape().head_dim};
  }
};

// One Gathered per kv head (shared selections) or per query head, in the calling thread's
// workspace (workers index into it).
std::vector<Gathered>& gathered_per(int n) {
  std::vector<Gathered>& g = workspace_object<std::vector<Gathered>>();
  if (static_cast<int>(g.size()) < n) g.resize(n);
  return g;
}

// Value mixing (Selection::mix_alpha): out = alpha * out + (1 - alpha) * mix_value. out: [hd]
void mix_value(const Selection& se, int g, int hd, float* out) {
  if (se.mix_alpha.empty()) return;
  const float a = se.mix_alpha[g];
  for (int c = 0; c < hd; ++c) out[c] = a * out[c] + (1.0f - a) * se.mix_value[c];
}

// One unit of decode attention work: chunk `chunk` of the key list shared by query heads
// [head0, head0 + n_q); its partial states go to parts + part_off, [n_q, state].
struct DecodeJob {
  int head0 = 0, n_q = 0, chunk = 0;
  size_t part_off = 0;
};

// Per-thread buffers of decode_step, reused across steps and layers.
struct DecodeScratch {
  std::vector<KvRows> rows;                   // [n_heads] rows each query head reads
  std::vector<const int32_t*> lists;          // [n_heads] its row list, null = rows in order
  std::vector<std::vector<int32_t>> rows_of;  // [n_heads] rows of its slots (freed rows)
  std::vector<int> n_keys;                    // [n_heads]
  std::vector<AttnQuery> queries;             // [n_kv_heads]
  std::vector<Selection> sel;                 // [n_kv_heads]
  std::vector<DecodeJob> jobs;
  std::vector<std::vector<size_t>> head_parts;  // [n_heads] offsets of its chunk states
  std::vector<float> parts;                     // [jobs, n_q, state]
  std::vector<float> total;                     // [state]
  std::vector<float> probs;     // [n_heads, n_visible] for policies that learn from them
  std::vector<int64_t> bounds;  // [ranges + 1] item ranges of the jobs + probs region
};

// What every step of one decode attention shares: the layer's step, its cache and shape.
struct Decode {
  const AttnStep& s;
  const KvCache& cache;
  const AttnShape& sh;
  DecodeScratch& x;     // the caller's: workers reach it through this reference
  int hd, n_group, ss;  // head_dim, query heads per kv head, attention state floats
  int n_visible;        // slots [0, n_visible) hold the keys the new token may read
  float scale;          // 1/sqrt(head_dim)
  bool offloaded;       // FASA-M: this layer's rows live in the file tier
};

// Select: one AttnQuery per kv-head group, and the policy's slots for each (the policy splits
// the layer's work over threads). x.sel: [n_kv_heads]
void select(Decode& d, AttentionPolicy& policy) {
  DecodeScratch& x = d.x;
  if (static_cast<int>(x.sel.size()) < d.sh.n_kv_heads) x.sel.resize(d.sh.n_kv_heads);
  x.queries.resize(d.sh.n_kv_heads);
  for (int g = 0; g < d.sh.n_kv_heads; ++g) {
    AttnQuery& q = x.queries[g];
    q.layer = d.s.layer;
    q.kv_head = g;
    q.q = d.s.q + static_cast<size_t>(g) * d.n_group * d.hd;
    q.n_group = d.n_group;
    q.pos = d.s.pos[0];
    q.n_visible = d.n_visible;
    q.cache = &d.cache;
  }
  for (int g = 0; g < d.sh.n_kv_heads; ++g) x.sel[g].mix_alpha.clear();  // no mixing unless set
  policy.select_layer(x.queries.data(), d.sh.n_kv_heads, x.sel.data());
}

// A head of kv head `kv` (i-th of its group) whose cache rows were freed (KvCache::evict):
// its slot list becomes a list of rows, once per group for a shared selection. x.lists[h]
void to_rows(Decode& d, int kv, int h, int i) {
  DecodeScratch& x = d.x;
  const Selection& se = x.sel[kv];
  FASA_CHECK(!se.all);  // an evicting policy never reads every slot again
  if (!se.per_head && i > 0) {
    x.lists[h] = x.lists[h - i];
    return;
  }
  std::vector<int32_t>& rows = x.rows_of[h];
  rows.resize(x.n_keys[h]);
  d.cache.rows_of(d.s.layer, kv, x.lists[h], x.n_keys[h], rows.data());
  x.lists[h] = rows.data();
}

// Fetch: the rows and slot list of every query head. An offloaded layer (FASA-M) reads the
// selected rows from its file tier here, once per group for a shared selection, per query head
// otherwise (the reads overlap, one job per kv head); attention then reads them contiguously,
// in selection order. x.rows, x.lists, x.n_keys: [n_heads]
void fetch(Decode& d) {
  DecodeScratch& x = d.x;
  x.rows.assign(d.sh.n_heads, KvRows{});
  x.lists.assign(d.sh.n_heads, nullptr);
  x.n_keys.assign(d.sh.n_heads, 0);
  if (x.rows_of.size() < static_cast<size_t>(d.sh.n_heads)) x.rows_of.resize(d.sh.n_heads);
  std::vector<Gathered>& fetched = gathered_per(d.sh.n_heads);
  auto setup = [&](int64_t g) {
    const Selection& se = x.sel[g];
    const int kv = static_cast<int>(g);
    for (int i = 0; i < d.n_group; ++i) {
      const int h = kv * d.n_group + i;
      const std::vector<int32_t>& list = se.slots_for(i);
      x.n_keys[h] = se.all ? d.n_visible : static_cast<int>(list.size());
      x.lists[h] = se.all ? nullptr : list.data();
      if (!d.offloaded) {
        x.rows[h] = rows_of(d.cache, d.s.layer, kv);
        if (d.cache.evicted(d.s.layer, kv)) to_rows(d, kv, h, i);
      } else if (se.per_head || i == 0) {
        x.rows[h] = fetched[h].fetch(d.cache, d.s.layer, kv, x.lists[h], x.n_keys[h]);
      } else {
        x.rows[h] = x.rows[h - i];  // the group's shared fetch
      }
      if (d.offloaded) x.lists[h] = nullptr;  // fetched rows are in selection order
    }
  };
  if (d.offloaded) {
    parallel_for(d.sh.n_kv_heads, setup);
  } else {
    for (int g = 0; g < d.sh.n_kv_heads; ++g) setup(g);
  }
  d.cache.check_io();
}

// FASA-M: while the rest of the step runs, read for this layer's next step the rows ranked just
// past its budget (Selection::next): consecutive steps select mostly the same rows, and the new
// ones mostly come from just below the cut. The rows that step selects are then copies rather
// than device reads (they join the tier's row cache).
void prefetch_runners_up(const Decode& d) {
  for (int g = 0; g < d.sh.n_kv_heads; ++g) {
    const Selection& se = d.x.sel[g];
    if (!se.all && !se.next.empty()) {
      d.cache.prefetch(d.s.layer, g, se.next.data(), static_cast<int>(se.next.size()));
    }
  }
}

// Plan: one job per (key-list owner, chunk of kAttnChunk keys), so the work splits evenly over
// threads at any depth; a shared selection's job serves the group's n_group query heads. Each
// head remembers where its chunks' states go. x.jobs, x.head_parts; x.parts: [jobs, n_q, state]
void plan(Decode& d) {
  DecodeScratch& x = d.x;
  x.jobs.clear();
  size_t off = 0;
  if (x.head_parts.size() < static_cast<size_t>(d.sh.n_heads)) x.head_parts.resize(d.sh.n_heads);
  for (int g = 0; g < d.sh.n_kv_heads; ++g) {
    const bool shared = !x.sel[g].per_head;
    for (int i = 0; i < d.n_group; i += shared ? d.n_group : 1) {
      const int h0 = g * d.n_group + i, n_q = shared ? d.n_group : 1;
      const int n = x.n_keys[h0];
      for (int k = 0; k < n_q; ++k) x.head_parts[h0 + k].clear();
      for (int c = 0; c * kAttnChunk < n; ++c) {
        x.jobs.push_back(DecodeJob{h0, n_q, c, off});
        for (int k = 0; k < n_q; ++k) x.head_parts[h0 + k].push_back(off + k * d.ss);
        off += static_cast<size_t>(n_q) * d.ss;
      }
    }
  }
  if (x.parts.size() < off) x.parts.resize(off);
}

// Contiguous ranges of items of about equal cost (key rows read x queries), fixed by the thread
// count: a head's probabilities cost about a whole key list, a chunk job one chunk per query.
// x.bounds: [ranges + 1]
void balance(Decode& d, int64_t n_jobs, int64_t n_items) {
  DecodeScratch& x = d.x;
  auto cost = [&](int64_t j) -> int64_t {
    if (j >= n_jobs) return x.n_keys[j - n_jobs];
    const DecodeJob& job = x.jobs[j];
    return int64_t{job.n_q} * std::min(kAttnChunk, x.n_keys[job.head0] - job.chunk * kAttnChunk);
  };
  x.bounds.assign(1, 0);
  int64_t total = 0;
  for (int64_t j = 0; j < n_items; ++j) total += cost(j);
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(num_threads(), n_items));
  int64_t acc = 0;
  for (int64_t j = 0; j < n_items; ++j) {
    acc += cost(j);
    const int64_t w = static_cast<int64_t>(x.bounds.size());  // the range being filled
    if (w < nt && acc * nt >= total * w && j + 1 < n_items) x.bounds.push_back(j + 1);
  }
  x.bounds.push_back(n_items);
}

// Attend: the planned chunk jobs (partial states into x.parts) and, for a policy that learns
// from probabilities (ProbabilityObserver: H2O), one item per query head computing them into
// x.probs from the same region (they read only the selection, not the chunk states).
// x.probs: [n_heads, n_visible]
void attend(Decode& d, bool probs) {
  DecodeScratch& x = d.x;
  if (probs) x.probs.resize(static_cast<size_t>(d.sh.n_heads) * d.n_visible);
  const int64_t n_jobs = static_cast<int64_t>(x.jobs.size());
  const int64_t n_items = n_jobs + (probs ? d.sh.n_heads : 0);
  auto item = [&](int64_t j) {
    if (j >= n_jobs) {
      const int h = static_cast<int>(j - n_jobs);
      attend_probs(d.s.q + static_cast<size_t>(h) * d.hd, x.rows[h], x.lists[h], x.n_keys[h],
                   d.scale, x.probs.data() + static_cast<size_t>(h) * d.n_visible);
      return;
    }
    const DecodeJob& job = x.jobs[j];
    ScratchFrame f;
    const float** qs = f.take<const float*>(job.n_q);  // [n_q]
    int* n_keys = f.take<int>(job.n_q);                // [n_q]
    const int n = x.n_keys[job.head0];
    std::fill(n_keys, n_keys + job.n_q, n);
    for (int k = 0; k < job.n_q; ++k) qs[k] = d.s.q + static_cast<size_t>(job.head0 + k) * d.hd;
    const int begin = job.chunk * kAttnChunk;
    attend_partial(qs, job.n_q, n_keys, x.rows[job.head0], x.lists[job.head0], begin,
                   std::min(n, begin + kAttnChunk), d.scale, x.parts.data() + job.part_off);
  };
  if (!probs) {
    parallel_for(n_items, item);
    return;
  }
  balance(d, n_jobs, n_items);
  parallel_for(static_cast<int64_t>(x.bounds.size()) - 1, [&](int64_t r) {
    for (int64_t j = x.bounds[r]; j < x.bounds[r + 1]; ++j) item(j);
  });
}

// Merge: each head's chunk states in chunk order into its output, then the selection's value
// mixing. s.out: [n_heads, head_dim]
void merge(Decode& d) {
  DecodeScratch& x = d.x;
  x.total.resize(d.ss);
  for (int h = 0; h < d.sh.n_heads; ++h) {
    float* out = d.s.out + static_cast<size_t>(h) * d.hd;
    attn_state_clear(x.total.data(), d.hd);
    for (size_t o : x.head_parts[h]) attn_state_merge(x.total.data(), x.parts.data() + o, d.hd);
    attn_state_finish(x.total.data(), d.hd, out);
    mix_value(x.sel[h / d.n_group], h % d.n_group, d.hd, out);
  }
}

// Account: what the step read and what dense attention would have read; a file tier's reads
// since `tier_before`. Rows count per kv-head group, each distinct row once (the rows a memory
// holding the group's K/V delivers): a shared selection's list, the union of per-head lists.
void account(const Decode& d, const TierStats& tier_before, AttnStats& st) {
  const DecodeScratch& x = d.x;
  const uint64_t row_bytes = 2ull * d.cache.row_bytes();  // one K row and one V row
  for (int h = 0; h < d.sh.n_heads; ++h) {
    st.decode_steps += 1;
    if (x.sel[h / d.n_group].dense_fallback) st.dense_fallbacks += 1;
  }
  for (int g = 0; g < d.sh.n_kv_heads; ++g) {
    const uint64_t rows = distinct_slots(x.sel[g], d.n_group, d.n_visible);
    st.slots_read += rows;
    st.slots_visible += d.n_visible;
    st.attend_bytes += rows * row_bytes;
    st.select_bytes += x.sel[g].bytes_read;
    st.dense_bytes += static_cast<uint64_t>(d.n_visible) * row_bytes;
  }
  if (d.offloaded) {
    const TierStats t = d.cache.tier_stats() - tier_before;
    st.tier_reads += t.reads;
    st.tier_read_bytes += t.read_bytes;
    st.tier_read_ns += t.read_ns;
    st.tier_prefetch_bytes += t.prefetch_read_bytes;
    st.tier_prefetch_rows += t.prefetch_rows;
    st.tier_prefetch_hits += t.prefetch_hits;
    st.tier_rows += t.rows;
    st.tier_cache_hits += t.cache_hits;
  }
}

// One decode step of a global layer: the policy selects, the selected rows are fetched, the
// attention jobs are planned and run, each head merges its chunks, and the step is counted.
void decode_step(const AttnStep& s, const KvCache& cache, const PolicyFacets& policy,
                 AttnStats* stats) {
  const AttnShape& sh = cache.shape();
  DecodeScratch& scratch = workspace_object<DecodeScratch>();
  Decode d{s,
           cache,
           sh,
           scratch,
           sh.head_dim,
           sh.n_group(),
           attn_state_size(sh.head_dim),
           s.first_slot + 1,
           1.0f / std::sqrt(static_cast<float>(sh.head_dim)),
           cache.offloaded(s.layer)};
  const TierStats tier_before = d.offloaded ? cache.tier_stats() : TierStats{};
  select(d, *policy.core);
  fetch(d);
  if (d.offloaded) prefetch_runners_up(d);
  plan(d);
  const bool probs = policy.probs != nullptr;
  attend(d, probs);
  merge(d);
  if (probs) {
    for (int h = 0; h < sh.n_heads; ++h) {
      policy.probs->on_probs(s.layer, h, d.x.sel[h / d.n_group],
                             d.x.probs.data() + static_cast<size_t>(h) * d.n_visible,
                             d.x.n_keys[h]);
    }
  }
  if (stats) account(d, tier_before, *stats);
}

// Dense causal prefill: token t reads slots [0, first_slot + t]. One job per (kv head, block
// of kPrefillBlock tokens): its n_group * block queries walk the keys chunk by chunk, tile by
// tile, so each K/V tile is read once for all of them; every query's arithmetic is exactly
// decode's (same chunks, tiles and merge order).
constexpr int kPrefillBlock = 16;

void prefill_step(const AttnStep& s, const KvCache& cache) {
  const AttnShape& sh = cache.shape();
  const int hd = sh.head_dim, n_group = sh.n_group(), ss = attn_state_size(hd);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<KvRows> kv_rows(sh.n_kv_heads);
  if (cache.offloaded(s.layer)) {  // FASA-M: every visible row comes back from the file tier
    std::vector<Gathered>& fetched = gathered_per(sh.n_kv_heads);
    parallel_for(sh.n_kv_heads, [&](int64_t g) {
      kv_rows[g] =
          fetched[g].fetch(cache, s.layer, static_cast<int>(g), nullptr, s.first_slot + s.n_tok);
    });
    cache.check_io();
  } else {
    for (int g = 0; g < sh.n_kv_heads; ++g) kv_rows[g] = rows_of(cache, s.layer, g);
  }
  // A kv head whose evicted rows were freed (KvCache::evict) reads what is kept: its kept slots
  // below the horizon (rows [0, kept)), then every slot from the horizon on (row = slot); key j
  // of that list is row lists[g][j], and `freed[g]` rows fewer are visible to each query.
  std::vector<std::vector<int32_t>> lists(sh.n_kv_heads);  // [n_kv_heads][visible rows]
  std::vector<int> freed(sh.n_kv_heads, 0);                // [n_kv_heads]
  for (int g = 0; g < sh.n_kv_heads; ++g) {
    if (!cache.evicted(s.layer, g)) continue;
    const int kept = static_cast<int>(cache.kept(s.layer, g).size());
    freed[g] = cache.evict_horizon(s.layer, g) - kept;
    lists[g].resize(s.first_slot + s.n_tok - freed[g]);
    for (int j = 0; j < static_cast<int>(lists[g].size()); ++j) {
      lists[g][j] = j < kept ? j : j + freed[g];
    }
  }
  const int n_blocks = (s.n_tok + kPrefillBlock - 1) / kPrefillBlock;
  // Later blocks read more keys; interleaving first and last blocks (0, N-1, 1, N-2, ...)
  // evens out the contiguous ranges static scheduling hands each thread.
  auto block_of = [&](int k) { return k % 2 == 0 ? k / 2 : n_blocks - 1 - k / 2; };
  parallel_for(int64_t{n_blocks} * sh.n_kv_heads, [&](int64_t job) {
    const int g = static_cast<int>(job % sh.n_kv_heads);
    const int b = block_of(static_cast<int>(job / sh.n_kv_heads));
    const int t0 = b * kPrefillBlock, t1 = std::min(s.n_tok, t0 + kPrefillBlock);
    const int n_q = (t1 - t0) * n_group;
    ScratchFrame f;
    const float** qs = f.take<const float*>(n_q);                 // [n_q]
    int* n_keys = f.take<int>(n_q);                               // [n_q]
    float* total = f.take<float>(static_cast<size_t>(n_q) * ss);  // [n_q, state]
    float* part = f.take<float>(static_cast<size_t>(n_q) * ss);   // [n_q, state]
    for (int t = t0; t < t1; ++t) {
      for (int i = 0; i < n_group; ++i) {
        const int k = (t - t0) * n_group + i;
        qs[k] = s.q + (static_cast<size_t>(t) * sh.n_heads + g * n_group + i) * hd;
        n_keys[k] = s.first_slot + t + 1 - freed[g];
        attn_state_clear(total + k * ss, hd);
      }
    }
    const int max_keys = s.first_slot + t1 - freed[g];
    const int32_t* list = lists[g].empty() ? nullptr : lists[g].data();
    for (int c0 = 0; c0 < max_keys; c0 += kAttnChunk) {
      attend_partial(qs, n_q, n_keys, kv_rows[g], list, c0, std::min(max_keys, c0 + kAttnChunk),
                     scale, part);
      for (int k = 0; k < n_q; ++k) attn_state_merge(total + k * ss, part + k * ss, hd);
    }
    for (int t = t0; t < t1; ++t) {
      for (int i = 0; i < n_group; ++i) {
        const int k = (t - t0) * n_group + i;
        attn_state_finish(total + k * ss, hd,
                          s.out + (static_cast<size_t>(t) * sh.n_heads + g * n_group + i) * hd);
      }
    }
  });
}

// A sliding-window layer, prefill and decode alike: the token at slot i reads slots
// (i - window, i], found in the layer's ring, in slot order. One job per (token, kv head): its
// group's queries walk that list chunk by chunk exactly as decode does, so prefilled and decoded
// tokens get the same bits. Policies do not see these layers (the window is the selection).
void window_step(const AttnStep& s, const KvCache& cache, AttnStats* stats) {
  const AttnShape& sh = cache.shape();
  const int hd = sh.head_dim, n_group = sh.n_group(), ss = attn_state_size(hd);
  const int window = sh.window(s.layer);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  parallel_for(int64_t{s.n_tok} * sh.n_kv_heads, [&](int64_t job) {
    const int g = static_cast<int>(job % sh.n_kv_heads);
    const int t = static_cast<int>(job / sh.n_kv_heads);
    const int i = s.first_slot + t, lo = std::max(0, i - window + 1), n = i - lo + 1;
    ScratchFrame f;
    int32_t* rows = f.take<int32_t>(n);                // [n] ring rows of slots lo..i
    const float** qs = f.take<const float*>(n_group);  // [n_group]
    int* n_keys = f.take<int>(n_group);                // [n_group]
    float* total = f.take<float>(static_cast<size_t>(n_group) * ss);  // [n_group, state]
    float* part = f.take<float>(static_cast<size_t>(n_group) * ss);   // [n_group, state]
    for (int j = 0; j < n; ++j) rows[j] = cache.row_of(s.layer, lo + j);
    std::fill(n_keys, n_keys + n_group, n);
    for (int k = 0; k < n_group; ++k) {
      qs[k] = s.q + (static_cast<size_t>(t) * sh.n_heads + g * n_group + k) * hd;
      attn_state_clear(total + k * ss, hd);
    }
    const KvRows kv = rows_of(cache, s.layer, g);
    for (int c0 = 0; c0 < n; c0 += kAttnChunk) {
      attend_partial(qs, n_group, n_keys, kv, rows, c0, std::min(n, c0 + kAttnChunk), scale, part);
      for (int k = 0; k < n_group; ++k) attn_state_merge(total + k * ss, part + k * ss, hd);
    }
    for (int k = 0; k < n_group; ++k) {
      attn_state_finish(total + k * ss, hd,
                        s.out + (static_cast<size_t>(t) * sh.n_heads + g * n_group + k) * hd);
    }
  });
  if (stats && s.n_tok == 1) {  // dense attention reads the same window
    const uint64_t n = std::min(s.first_slot + 1, window);
    const uint64_t row_bytes = 2ull * cache.row_bytes();
    stats->decode_steps += sh.n_heads;
    stats->slots_read += n * sh.n_kv_heads;
    stats->slots_visible += n * sh.n_kv_heads;
    stats->window_slots += n * sh.n_kv_heads;
    stats->attend_bytes += n * row_bytes * sh.n_kv_heads;
    stats->dense_bytes += n * row_bytes * sh.n_kv_heads;
    stats->window_bytes += n * row_bytes * sh.n_kv_heads;
  }
}

}  // namespace

void attention_forward(const AttnStep& s, const KvCache& cache, const PolicyFacets& policy,
                       AttnStats* stats) {
  if (stats && s.n_tok == 1 && s.layer == 0) stats->decode_tokens += 1;
  if (cache.shape().window(s.layer) > 0) {
    window_step(s, cache, stats);
    return;
  }
  if (s.n_tok == 1) {
    decode_step(s, cache, policy, stats);
    return;
  }
  prefill_step(s, cache);
  if (policy.prefill) {
    policy.prefill->on_prefill_queries(cache, s.layer, s.first_slot, s.n_tok, s.q);
  }
}

}  // namespace fasa
