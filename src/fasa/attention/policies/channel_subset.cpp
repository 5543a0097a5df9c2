// ChannelSubsetPolicy: the token selection `fasa` and `double-sparsity` share (channel_subset.h).
// Each query head scores every cached token with a fixed, calibrated subset of key channels read
// from a packed copy (TIP), and exact attention reads the top-B slots. Short contexts: one job
// per kv head; long ones: TIP in (kv head, slot range) jobs. FASA-C keeps the packed copy next to
// the full cache; FASA-M asks the session for a tiered cache (KvTiering) whose RAM tier is that
// copy (slice=auto; with another slice store the policy keeps the copy and the file whole rows;
// dense layers stay whole in RAM), and fetches only the selected rows. Both read the same packed
// values and select the same slots, so their outputs are equal. Hybrid stacks
// (gemma3): the policy keeps no state for sliding-window layers (no packed slice, no groups),
// and FASA-M never offloads them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "fasa/attention/policies/channel_subset.h"
#include "fasa/attention/policies/packed_slice.h"
#include "fasa/attention/policies/value_mean.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/tip.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// KvTiering::cache_rows of variant m: row_cache= rows, or twice the rows a step selects per
// (layer, kv head): the budget (its mean over the layers with layer_budget=calibrated), times the
// group with per-head lists; a fraction budget gives a fraction of the capacity (all of it from
// a half up).
double row_cache_rows(const ChannelSubsetOptions& o, int n_group) {
  if (o.row_cache >= 0) return o.row_cache;
  const double per_step = o.budget * (o.per_head ? n_group : 1);
  constexpr double kEverySlot = 1u << 30;  // more than any capacity: KvCache caps it
  if (o.budget < 1.0) return 2.0 * per_step < 1.0 ? 2.0 * per_step : kEverySlot;
  return 2.0 * per_step;
}

// One scoring dim of a query head, as positions inside its kv head's packed row.
struct PackedDim {
  int q;    // dim of the query (and of the key)
  int col;  // column of the packed K_dom row
};

class ChannelSubsetPolicy final : public AttentionPolicy, public TieredPolicy, public Rewindable {
 public:
  ChannelSubsetPolicy(std::string name, const PolicyContext& ctx, ChannelSubsetOptions o,
                      const std::vector<std::vector<int>>& head_dims)
      : name_(std::move(name)),
        shape_(ctx.shape),
        o_(std::move(o)),
        layers_(shape_.global_layers()),
        layer_row_(shape_.n_layers, -1) {
    for (size_t i = 0; i < layers_.size(); ++i) layer_row_[layers_[i]] = static_cast<int>(i);
    if (o_.mean_value) means_ = std::make_unique<ValueMeans>(shape_);
    const int n_group = shape_.n_group();
    FASA_CHECK(head_dims.size() == layers_.size() * shape_.n_heads);
    auto dims_of = [&](int l, int h) -> const std::vector<int>& {
      return head_dims[static_cast<size_t>(layer_row_[l]) * shape_.n_heads + h];
    };
    groups_.resize(layers_.size() * shape_.n_kv_heads);
    for (int l : layers_) {
      for (int g = 0; g < shape_.n_kv_heads; ++g) {
        Group& gr = group(l, g);
        // Packed dims: the union of the group's heads' scoring dims, in dim order.
        std::set<int> dims;
        for (int j = 0; j < n_group; ++j) {
          for (int d : dims_of(l, g * n_group + j)) dims.insert(d);
        }
        gr.dims.assign(dims.begin(), dims.end());
        auto col = [&](int d) {
          return static_cast<int>(std::lower_bound(gr.dims.begin(), gr.dims.end(), d) -
                                  gr.dims.begin());
        };
        gr.heads.resize(n_group);
        for (int j = 0; j < n_group; ++j) {
          for (int d : dims_of(l, g * n_group + j)) gr.heads[j].push_back(PackedDim{d, col(d)});
        }
      }
    }
    if (o_.variant_m) {
      tiering_.dir = o_.offload_dir;
      tiering_.prefetch = o_.prefetch;
      tiering_.cache_rows = row_cache_rows(o_, n_group);
      // The selecting global layers go to the file. A dense layer stays whole in RAM: every
      // step reads all its rows (from a file that was a third of the device reads on the 8B
      // shape at 16K, for 1/n_layers of the KV). Sliding-window layers stay whole in RAM too
      // (their small rings are what every step reads).
      tiering_.offload_layer.assign(shape_.n_layers, 0);
      for (int l = 0; l < shape_.n_layers; ++l) {
        const bool offload = layer_row_[l] >= 0 && o_.dense_layers.count(l) == 0;
        tiering_.offload_layer[l] = offload ? 1 : 0;
        for (int g = 0; g < shape_.n_kv_heads; ++g) {
          // With a slice of its own the policy scores from RAM, and the file holds whole rows.
          tiering_.hot_dims.push_back(offload && cache_holds_slice() ? group(l, g).dims
                                                                     : std::vector<int>{});
        }
      }
    }
  }

  // Only FASA-M asks for a tiered cache.
  bool offers(Facet f) const override { return f != Facet::Tiering || o_.variant_m; }
  const KvTiering& tiering() const override { return tiering_; }

  std::string_view name() const override { return name_; }

  // Keep the packed dominant-dim slice of K up to date, in the store `slice=` asks for
  // (packed_slice.h; auto: the cache's own values).
  void on_append(const KvCache& cache, int layer, int first_slot, int n) override {
    store_ = slice_store(o_.slice, cache.type());
    n_slots_ = std::max(n_slots_, first_slot + n);
    if (layer_row_[layer] < 0) return;  // a sliding-window layer: not the policy's
    if (o_.dense_layers.count(layer)) return;
    if (means_) means_->on_append(cache, layer, first_slot, n);
    if (cache_holds_slice()) return;
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      Group& gr = group(layer, g);
      if (!gr.slice.holds(store_, cache.capacity())) {
        gr.slice.reset(store_, gr.dims, cache.capacity());
      }
      gr.slice.append(cache, layer, g, first_slot, n);
    }
  }

  // The packed slices are a function of the rows: rows >= n are written again by on_append.
  // mean_value's running V sums go back to the save point.
  void save_point() override {
    if (means_) means_->save_point();
  }
  void rollback(const KvCache&, int n) override {
    n_slots_ = n;
    if (means_) means_->rollback(n);
  }

  // The packed slices' bytes in use (FASA-M's with slice=auto live in the cache and are
  // counted there).
  uint64_t resident_bytes() const override {
    if (cache_holds_slice()) return 0;
    uint64_t n = means_ ? means_->resident_bytes() : 0;
    for (int l : layers_) {
      if (o_.dense_layers.count(l)) continue;
      for (int g = 0; g < shape_.n_kv_heads; ++g) {
        n += slice_bytes(store_, group(l, g).dims.size(), n_slots_);
      }
    }
    return n;
  }

  void select(const AttnQuery& q, Selection& out) override {
    if (q.candidates) {
      select_candidates(q, out);
      return;
    }
    select_staged(&q, 1, &out);
  }

  // Short contexts: one job per kv head does all of its group's work (three stages of barriers
  // cost more than the imbalance of 3 kv heads on 2 threads); long ones: the staged split.
  // A candidate list (pyramidkv+fasa) is short: one job per kv head.
  void select_layer(const AttnQuery* qs, int n_kv, Selection* outs) override {
    if (qs[0].candidates) {
      parallel_for(n_kv, [&](int64_t g) { select_candidates(qs[g], outs[g]); });
    } else if (qs[0].n_visible < kStagedMinSlots) {
      parallel_for(n_kv, [&](int64_t g) { select_staged(&qs[g], 1, &outs[g]); });
    } else {
      select_staged(qs, n_kv, outs);
    }
  }

  // Three parallel stages over the layer's kv heads: TIP in jobs of (kv head, slot range), each
  // scoring every query head of the group tile by tile, so a tile of the packed slice is read
  // from memory once for all of them; then per (kv head, query head) the softmax (shared) or
  // the pick (per head); then, shared, per kv head the sum of the heads' probabilities (in head
  // order) and the pick. Every score is the bits select() alone would give.
  void select_staged(const AttnQuery* qs, int n_kv, Selection* outs) {
    const int n = qs[0].n_visible, layer = qs[0].layer, ng = qs[0].n_group;
    FASA_CHECK(layer_row_[layer] >= 0);  // the driver never asks about a sliding-window layer
    const int budget = layer_budget(o_, layer, n);
    if (budget >= n || o_.dense_layers.count(layer)) {
      for (int g = 0; g < n_kv; ++g) outs[g].set_all();
      return;
    }
    if (o_.break_even && !o_.variant_m && !pays(qs, n_kv, n, budget)) {
      for (int g = 0; g < n_kv; ++g) {
        outs[g].set_all();
        outs[g].dense_fallback = true;
      }
      return;
    }
    for (int g = 0; g < n_kv; ++g) {
      Selection& out = outs[g];
      out.all = false;
      out.per_head = o_.per_head;
      out.bytes_read = slice_bytes(store_, group(layer, qs[g].kv_head).dims.size(),
                                   n);  // the packed slice, once
      if (o_.per_head) out.head_slots.resize(ng);
    }
    ScratchFrame f;  // the caller's: workers write into it
    float* scores = f.take<float>(static_cast<size_t>(n_kv) * ng * n);  // [n_kv, ng, n]
    // Slot ranges: whole tiles, about kRangeSlots each, so jobs outnumber threads at depth.
    const int n_tiles = (n + kTipTile - 1) / kTipTile;
    const int n_ranges = std::clamp(n / kRangeSlots, 1, n_tiles);
    parallel_for(int64_t{n_kv} * n_ranges, [&](int64_t job) {
      const int g = static_cast<int>(job / n_ranges), r = static_cast<int>(job % n_ranges);
      const int tile0 = n_tiles * r / n_ranges, tile1 = n_tiles * (r + 1) / n_ranges;
      tip_group(qs[g], tile0 * kTipTile, std::min(n, tile1 * kTipTile),
                scores + static_cast<size_t>(g) * ng * n);
    });
    // gqa=shared: the probabilities go to their own buffer when mean_value needs the scores
    // afterwards, else over them.  probs: [n_kv, ng, n]
    float* probs =
        means_ && !o_.per_head ? f.take<float>(static_cast<size_t>(n_kv) * ng * n) : scores;
    // mean_value: each head's softmax at SparQ's temperature, as its shift and sum.  [n_kv, ng]
    SoftmaxSum* sums = means_ ? f.take<SoftmaxSum>(static_cast<size_t>(n_kv) * ng) : nullptr;
    if (means_) {
      for (int g = 0; g < n_kv; ++g) outs[g].mix_alpha.assign(ng, 1.0f);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape_.head_dim));
    parallel_for(int64_t{n_kv} * ng, [&](int64_t job) {
      const int g = static_cast<int>(job / ng), j = static_cast<int>(job % ng);
      const float* score = scores + job * n;
      const float mx = max_value(score, n);
      if (sums) sums[job] = alpha_softmax(qs[g], j, score, mx);
      if (o_.per_head) {
        std::vector<int32_t>& slots = outs[g].head_slots[j];
        pick(scores + job * n, n, budget, slots);
        if (sums) outs[g].mix_alpha[j] = softmax_mass_on(score, sums[job], slots);
        return;
      }
      softmax_scaled(score, scale, mx * scale, n, probs + job * n);
    });
    if (!o_.per_head)
      pick_shared(qs, n_kv, n, budget, probs, means_ ? scores : nullptr, sums, outs);
    if (means_) {
      for (int g = 0; g < n_kv; ++g) outs[g].mix_value = means_->mean(qs[g]);
    }
  }

  // gqa=shared: per kv head the sum of its heads' probabilities (in head order) and the pick;
  // with mean_value, each head's alpha over the picked slots.
  // scores: [n_kv, ng, n] softmax probabilities; raw: [n_kv, ng, n] TIP scores or null;
  // sums: [n_kv, ng] their softmax sums at SparQ's temperature (with raw)
  void pick_shared(const AttnQuery* qs, int n_kv, int n, int budget, const float* scores,
                   const float* raw, const SoftmaxSum* sums, Selection* outs) const {
    const int ng = qs[0].n_group;
    parallel_for(n_kv, [&](int64_t g) {
      ScratchFrame fm;
      float* mass = fm.take<float>(n);  // [n]
      std::fill(mass, mass + n, 0.0f);
      for (int j = 0; j < ng; ++j) {
        const float* score = scores + (g * ng + j) * n;
        for (int t = 0; t < n; ++t) mass[t] += score[t];
      }
      pick(mass, n, budget, outs[g].slots);
      runners_up(mass, n, budget, outs[g]);
      if (!raw) return;
      for (int j = 0; j < ng; ++j) {
        const int64_t job = g * ng + j;
        outs[g].mix_alpha[j] = softmax_mass_on(raw + job * n, sums[job], outs[g].slots);
      }
    });
  }

  // mean_value: query head j's TIP scores as logits of a softmax at SparQ's temperature for
  // its scoring dims (alpha is that softmax's mass on the selected slots).  raw: [n], mx its
  // maximum
  SoftmaxSum alpha_softmax(const AttnQuery& q, int j, const float* raw, float mx) const {
    struct DimScratch {
      std::vector<int32_t> dims;
    };
    auto& dims = workspace_object<DimScratch>().dims;
    dims.clear();
    for (const PackedDim& d : group(q.layer, q.kv_head).heads[j]) dims.push_back(d.q);
    const int hd = shape_.head_dim;
    const float* qh = q.q + static_cast<size_t>(j) * hd;
    const double temp = subset_temperature(qh, dims.data(), static_cast<int>(dims.size()), hd);
    return softmax_sum(raw, q.n_visible, temp, mx);
  }

 private:
  static constexpr int kStagedMinSlots = 4096;  // visible slots from which select_layer splits
  static constexpr int kTipTile = 256;          // slots scored for every head before moving on
  static constexpr int kRangeSlots = 1024;      // slots per TIP job (about)

  // TIP scores of every query head of q's group over slots [t0, t1), tile by tile.
  // scores: [n_group, n_visible]
  void tip_group(const AttnQuery& q, int t0, int t1, float* scores) const {
    const Group& gr = group(q.layer, q.kv_head);
    const SliceView slice = slice_view(q);
    struct TermScratch {
      std::vector<TipTerm> terms;  // [n_group, scoring dims of a head]
      std::vector<int> first;      // [n_group + 1] each head's terms
    };
    TermScratch& sc = workspace_object<TermScratch>();
    auto& terms = sc.terms;
    auto& first = sc.first;
    terms.clear();
    first.assign(1, 0);
    for (int j = 0; j < q.n_group; ++j) {
      const float* qh = q.q + j * shape_.head_dim;
      for (const PackedDim& d : gr.heads[j]) terms.push_back(TipTerm{d.col, qh[d.q]});
      first.push_back(static_cast<int>(terms.size()));
    }
    // A slot's score does not depend on where a call starts (tiles start at whole blocks).
    static_assert(kTipTile % kTipBlock == 0);
    for (int a = t0; a < t1; a += kTipTile) {
      const int len = std::min(kTipTile, t1 - a);
      for (int j = 0; j < q.n_group; ++j) {
        float* out = scores + static_cast<size_t>(j) * q.n_visible + a;
        slice_tip(slice, terms.data() + first[j], first[j + 1] - first[j], a, len, out);
      }
    }
  }

  // The packed slice of q's kv head: the policy's, or the cache's RAM tier (FASA-M, auto).
  SliceView slice_view(const AttnQuery& q) const {
    if (!cache_holds_slice()) return group(q.layer, q.kv_head).slice.view();
    SliceView v;
    v.store = store_;
    v.codes = static_cast<const uint8_t*>(q.cache->hot_rows(q.layer, q.kv_head));
    v.scale = store_ == SliceStore::Q8Slot ? q.cache->hot_scales(q.layer, q.kv_head) : nullptr;
    v.capacity = q.cache->capacity();
    return v;
  }

  // TIP over the candidate slots only (q.candidates, m of them): their packed columns are
  // gathered into [dims, m] and scored as select_staged scores any slot (the same bits per
  // slot); the softmax (shared) runs over the candidates, and sinks/recent are the first/last
  // candidates. A dense layer, or a budget covering the candidates, takes them all.
  void select_candidates(const AttnQuery& q, Selection& out) {
    const int m = q.n_candidates, ng = q.n_group;
    const int budget = layer_budget(o_, q.layer, q.n_visible);
    const std::vector<int32_t> cand(q.candidates, q.candidates + m);
    out.all = false;
    out.per_head = o_.per_head;
    out.bytes_read = 0;
    if (budget >= m || o_.dense_layers.count(q.layer)) {
      if (o_.per_head) {
        out.head_slots.assign(ng, cand);
      } else {
        out.slots = cand;
      }
      return;
    }
    const Group& gr = group(q.layer, q.kv_head);
    const SliceView slice = slice_view(q);
    // Unblocked stores: the candidates' columns gathered into a slice of m slots (the same
    // values, so the same bits per slot); blocked ones score each candidate where it is.
    const bool gather = !blocked(store_);
    const bool q8 = store_ == SliceStore::Q8Slot;
    const size_t w = gr.dims.size(), cap = slice.capacity;
    const size_t eb = q8 ? 1 : store_ == SliceStore::F32 ? 4 : 2;
    const uint8_t* packed = slice.codes;
    struct CandScratch {
      std::vector<uint8_t> cols;     // [dims, m] the candidates' packed columns
      std::vector<uint16_t> cscale;  // q8_0: [m] their scales
      std::vector<float> scores;     // [n_group, m]
      std::vector<TipTerm> terms;
      std::vector<int32_t> picked;
    };
    CandScratch& sc = workspace_object<CandScratch>();
    auto& cols = sc.cols;
    auto& cscale = sc.cscale;
    auto& scores = sc.scores;
    auto& terms = sc.terms;
    auto& picked = sc.picked;
    SliceView gathered{store_, nullptr, nullptr, static_cast<size_t>(m)};
    if (gather) {
      cols.resize(w * m * eb);
      for (size_t i = 0; i < w; ++i) {
        for (int c = 0; c < m; ++c) {
          std::memcpy(cols.data() + (i * m + c) * eb, packed + (i * cap + cand[c]) * eb, eb);
        }
      }
      gathered.codes = cols.data();
      if (q8) {
        cscale.resize(m);
        for (int c = 0; c < m; ++c) cscale[c] = slice.scale[cand[c]];
        gathered.scale = cscale.data();
      }
    }
    out.bytes_read = slice_bytes(store_, w, m);
    scores.resize(static_cast<size_t>(ng) * m);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape_.head_dim));
    if (o_.per_head) out.head_slots.resize(ng);
    for (int j = 0; j < ng; ++j) {
      const float* qh = q.q + j * shape_.head_dim;
      terms.clear();
      for (const PackedDim& d : gr.heads[j]) terms.push_back(TipTerm{d.col, qh[d.q]});
      float* score = scores.data() + static_cast<size_t>(j) * m;
      const int nt = static_cast<int>(terms.size());
      for (int a = 0; gather && a < m; a += kTipTile) {
        slice_tip(gathered, terms.data(), nt, a, std::min(kTipTile, m - a), score + a);
      }
      for (int c = 0; !gather && c < m; ++c) {
        score[c] = slice_tip_one(slice, terms.data(), nt, cand[c]);
      }
      if (o_.per_head) {
        pick(score, m, budget, picked);
        out.head_slots[j].clear();
        for (int32_t c : picked) out.head_slots[j].push_back(cand[c]);
        continue;
      }
      for (int c = 0; c < m; ++c) score[c] *= scale;
      softmax_inplace(score, m);
    }
    if (o_.per_head) return;
    struct MassScratch {
      std::vector<float> mass;  // [m]
    };
    auto& mass = workspace_object<MassScratch>().mass;
    mass.assign(m, 0.0f);
    for (int j = 0; j < ng; ++j) {
      for (int c = 0; c < m; ++c) mass[c] += scores[static_cast<size_t>(j) * m + c];
    }
    pick(mass.data(), m, budget, picked);
    out.slots.clear();
    for (int32_t c : picked) out.slots.push_back(cand[c]);
  }

  struct Group {
    std::vector<int> dims;                      // packed K dims (ascending)
    std::vector<std::vector<PackedDim>> heads;  // [n_group][scoring dims of the head]
    PackedSlice slice;                          // FASA-C: the packed dims of every slot
  };
  // Break-even (FASA-C): selecting pays when the layer's packed slices plus the selected K/V
  // rows are under kBreakEven of what dense attention reads (the rest of the margin pays for the
  // softmax, the pick and the scattered reads). Below that context length the policy attends
  // densely and says so (Selection::dense_fallback). Sinks and recent rows are inside the budget.
  // FASA-M always selects: its slice is in RAM and dense attention would read every row from
  // the file tier.
  static constexpr double kBreakEven = 0.8;
  bool pays(const AttnQuery* qs, int n_kv, int n, int budget) {
    const double kv_row = 2.0 * static_cast<double>(qs[0].cache->row_bytes());  // K and V
    double select = 0.0;
    for (int g = 0; g < n_kv; ++g) {
      select += static_cast<double>(
                    slice_bytes(store_, group(qs[g].layer, qs[g].kv_head).dims.size(), n)) +
                static_cast<double>(budget) * kv_row * (o_.per_head ? qs[g].n_group : 1);
    }
    return select < kBreakEven * n_kv * static_cast<double>(n) * kv_row;
  }
  // FASA-M with slice=auto: the tiered cache's RAM tier is the packed slice (the cache's own
  // values); otherwise the policy keeps the slice (FASA-C; FASA-M with f16, q8 or q4).
  bool cache_holds_slice() const { return o_.variant_m && o_.slice == SliceFormat::Auto; }
  Group& group(int layer, int g) {
    return groups_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }
  const Group& group(int layer, int g) const {
    return groups_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }

  // FASA-M with prefetch: the budget / 4 (at least 1) slots that score best after the picked
  // ones, for the file tier to read in the background before the layer's next step (mass is
  // spent).
  void runners_up(float* mass, int n, int budget, Selection& out) const {
    out.next.clear();
    if (!o_.variant_m || !o_.prefetch) return;
    const int r = std::min(std::max(budget / 4, 1), n - static_cast<int>(out.slots.size()));
    if (r <= 0) return;
    for (int32_t t : out.slots) mass[t] = -INFINITY;
    top_k_indices(mass, n, r, out.next);
    std::sort(out.next.begin(), out.next.end());
  }

  // Sinks and recent slots first (inside the budget), then the best-scoring rest; scores are
  // as they were afterwards (the forced slots' own are set aside while top_k runs).  scores: [n]
  void pick(float* scores, int n, int budget, std::vector<int32_t>& out) const {
    struct ForcedScratch {
      std::vector<int32_t> forced;
      std::vector<float> kept;  // [forced] their scores
    };
    auto& sc = workspace_object<ForcedScratch>();
    auto& forced = sc.forced;
    forced.clear();
    for (int t = 0; t < std::min(o_.sink, n); ++t) forced.push_back(t);
    for (int t = std::max(n - o_.recent, std::min(o_.sink, n)); t < n; ++t) forced.push_back(t);
    if (static_cast<int>(forced.size()) >= budget) {
      forced.resize(budget);
      out = forced;
      return;
    }
    sc.kept.clear();
    for (int32_t t : forced) {
      sc.kept.push_back(scores[t]);
      scores[t] = -INFINITY;
    }
    top_k_indices(scores, n, budget - static_cast<int>(forced.size()), out);
    for (size_t i = 0; i < forced.size(); ++i) scores[forced[i]] = sc.kept[i];
    out.insert(out.end(), forced.begin(), forced.end());
    std::sort(out.begin(), out.end());
  }

  std::string name_;
  AttnShape shape_;
  ChannelSubsetOptions o_;
  std::vector<int> layers_;     // [n_global] the global layers, the policy's
  std::vector<int> layer_row_;  // [n_layers] index in layers_, -1 for a sliding-window layer
  SliceStore store_ = SliceStore::F16;  // of the packed slices (the cache's type and `slice`)
  int n_slots_ = 0;                     // slots written so far (the packed slices' used length)
  std::vector<Group> groups_;           // [n_global, n_kv_heads]
  KvTiering tiering_;                   // variant m: the cache layout asked of the session
  std::unique_ptr<ValueMeans> means_;   // mean_value: the running V sums
};

}  // namespace

int layer_budget(const ChannelSubsetOptions& o, int layer, int n) {
  const int b = resolve_budget(o.budget, n);
  if (o.layer_weight.empty() || o.layer_weight[layer] <= 0.0) return b;
  // Largest remainder over the selecting layers (weight > 0): floors, then one slot each to
  // the largest fractions (ties: the lower layer) until the total is theirs x b.
  struct Share {
    int layer;
    int64_t floor;
    double frac;
  };
  std::vector<Share> shares;
  int64_t given = 0;
  for (int l = 0; l < static_cast<int>(o.layer_weight.size()); ++l) {
    if (o.layer_weight[l] <= 0.0) continue;
    const double quota = o.layer_weight[l] * b;
    const auto fl = static_cast<int64_t>(std::floor(quota));
    shares.push_back({l, fl, quota - static_cast<double>(fl)});
    given += fl;
  }
  const int64_t total = static_cast<int64_t>(shares.size()) * b;
  std::vector<Share> by_frac = shares;
  std::stable_sort(by_frac.begin(), by_frac.end(),
                   [](const Share& x, const Share& y) { return x.frac > y.frac; });
  int64_t mine = 0;
  for (const Share& s : shares) {
    if (s.layer == layer) mine = s.floor;
  }
  const int64_t extra = std::clamp<int64_t>(total - given, 0, static_cast<int64_t>(shares.size()));
  for (int64_t i = 0; i < extra; ++i) {
    if (by_frac[i].layer == layer) mine += 1;
  }
  return static_cast<int>(std::max<int64_t>(1, mine));
}

std::unique_ptr<AttentionPolicy> make_channel_subset_policy(
    std::string name, const PolicyContext& ctx, ChannelSubsetOptions o,
    const std::vector<std::vector<int>>& head_dims) {
  return std::make_unique<ChannelSubsetPolicy>(std::move(name), ctx, std::move(o), head_dims);
}

}  // namespace fasa
