// `quest`: Quest (Tang et al., "Quest: Query-Aware Sparsity for Efficient Long-Context LLM
// Inference", ICML 2024). The cache is cut into pages of `page` consecutive slots; per (layer,
// kv head, page) the policy keeps the channel-wise min and max of the page's keys. At a decode
// step a page's criticality is the upper bound of q.k over any key inside that box,
// sum_c max(q_c * min_c, q_c * max_c); the top pages are read whole.
//
// GQA (Quest was published for multi-head models): the group's query heads share one page list,
// and a page's score is the MAX over the heads of their bounds. The max keeps the bound's
// meaning (for every head, the page score is >= every true q.k in the page), so a page any head
// could find decisive is read; a sum would let one head's negative bound cancel another head's
// high one, which no softmax of any single head does.
//
// Budget (tokens per kv-head group, shared semantics): k = resolve_budget(budget, n) slots. The
// newest page, partly filled, is always read (as Quest does): its newest min(k, fill) slots. The
// other pages follow by score (ties: the lower page), whole, until k slots are taken; when what is
// left of k is not a whole page, the last page taken contributes only its first slots. So a step
// reads exactly k slots from ceil((k - fill) / page) pages besides the newest (k a multiple of
// the page and a full newest page: k / page pages, all whole), never more than k.
// dense_layers (default 0+1: the first two layers, Quest's setting) are attended densely; on a
// hybrid stack only global layers may be named, and default layers that are sliding-window layers
// are dropped (as for `fasa`). Side data: per page 2 x head_dim key values, counted at the cache's
// element width (a min or max of keys is itself a key value of that type; kept as f32 here for
// the scoring loop). Cost per decode step per kv-head group: read n/page boxes (bytes_read), score
// them for each query head (O(n/page * n_group * head_dim)), an O(n/page) top-k.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "fasa/attention/policies/option_table.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"
#include "fasa/core/f16.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// Key `slot` of (layer, kv head) as floats (Q8_0: dequantized). out: [head_dim]
void key_row(const KvCache& cache, int layer, int kv_head, int slot, float* out) {
  const auto* k = static_cast<const uint8_t*>(cache.k_rows(layer, kv_head)) +
                  static_cast<size_t>(slot) * cache.row_bytes();
  kv_row_to_f32(k, cache.type(), cache.shape().head_dim, out);
}

class QuestPolicy final : public AttentionPolicy, public Rewindable {
 public:
  QuestPolicy(const AttnShape& shape, double budget, int page, std::set<int> dense)
      : shape_(shape),
        budget_(budget),
        page_(page),
        dense_(std::move(dense)),
        layer_row_(shape.n_layers, -1) {
    const std::vector<int> global = shape.global_layers();
    for (size_t i = 0; i < global.size(); ++i) layer_row_[global[i]] = static_cast<int>(i);
    boxes_.resize(global.size() * shape.n_kv_heads);
  }
  std::string_view name() const override { return "quest"; }

  // Recomputes the box of every page the new slots touch from the cache (the page's slots
  // written so far), so a partly filled page, a range starting mid-page or a rewrite is exact.
  void on_append(const KvCache& cache, int layer, int first_slot, int n) override {
    const int hd = shape_.head_dim;
    row_bytes_ = cache.row_bytes();
    if (layer_row_[layer] < 0 || dense_.count(layer) || n <= 0) return;
    const int last = first_slot + n;  // slots [0, last) are written
    const size_t pages_cap = (static_cast<size_t>(cache.capacity()) + page_ - 1) / page_;
    for (int g = 0; g < shape_.n_kv_heads; ++g) {
      Boxes& b = boxes(layer, g);
      if (b.lo.size() != pages_cap * hd) {
        b.lo.assign(pages_cap * hd, 0.0f);
        b.hi.assign(pages_cap * hd, 0.0f);
      }
      for (int p = first_slot / page_; p * page_ < last; ++p) rebox(cache, layer, g, p, last, b);
      b.n_pages = std::max(b.n_pages, (last + page_ - 1) / page_);
    }
  }

  // The boxes are a function of the rows: nothing to save; at rollback the pages past n are
  // dropped, and the page holding slot n - 1 is boxed again over its slots below n.
  void save_point() override {}
  void rollback(const KvCache& cache, int n) override {
    for (int layer = 0; layer < shape_.n_layers; ++layer) {
      if (layer_row_[layer] < 0 || dense_.count(layer)) continue;
      for (int g = 0; g < shape_.n_kv_heads; ++g) {
        Boxes& b = boxes(layer, g);
        if (b.lo.empty()) continue;
        b.n_pages = std::min(b.n_pages, (n + page_ - 1) / page_);
        if (n % page_ != 0) rebox(cache, layer, g, n / page_, n, b);
      }
    }
  }

  uint64_t resident_bytes() const override {
    uint64_t n = 0;
    for (const Boxes& b : boxes_) n += static_cast<uint64_t>(b.n_pages) * 2;
    return n * row_bytes_;
  }

  void select(const AttnQuery& q, Selection& out) override {
    const int n = q.n_visible, hd = shape_.head_dim;
    FASA_CHECK(layer_row_[q.layer] >= 0);  // the driver never asks about a sliding-window layer
    const int k = resolve_budget(budget_, n);
    if (k >= n || dense_.count(q.layer)) {
      out.set_all();
      return;
    }
    const Boxes& b = boxes(q.layer, q.kv_head);
    const int n_pages = (n + page_ - 1) / page_, newest = n_pages - 1;
    out.all = false;
    out.per_head = false;
    out.bytes_read = static_cast<uint64_t>(n_pages) * 2 * q.cache->row_bytes();  // every box
    std::vector<int32_t>& slots = out.slots;
    slots.clear();
    // The newest page first: its newest min(k, fill) slots.
    const int newest_first = std::max(newest * page_, n - k);
    for (int s = newest_first; s < n; ++s) slots.push_back(s);
    int left = k - (n - newest_first);
    if (left > 0) {
      struct PageScratch {
        std::vector<float> score;  // [n_pages]
        std::vector<int32_t> top;
      };
      PageScratch& sc = workspace_object<PageScratch>();
      auto& score = sc.score;
      auto& top = sc.top;
      score.resize(n_pages);
      for (int p = 0; p < newest; ++p) {
        score[p] = page_bound(q, b.lo.data() + static_cast<size_t>(p) * hd,
                              b.hi.data() + static_cast<size_t>(p) * hd);
      }
      const int want = std::min(newest, (left + page_ - 1) / page_);
      top_k_indices(score.data(), newest, want, top);
      // Best first (ties: the lower page), so the partly taken page is the lowest ranked.
      std::sort(top.begin(), top.end(), [&](int32_t a, int32_t c) {
        return score[a] > score[c] || (score[a] == score[c] && a < c);
      });
      for (int32_t p : top) {
        const int take = std::min(left, page_);
        for (int s = p * page_; s < p * page_ + take; ++s) slots.push_back(s);
        left -= take;
      }
    }
    std::sort(slots.begin(), slots.end());
  }

  // The page's upper bound of q.k for each query head of the group; their max.
  float page_bound(const AttnQuery& q, const float* lo, const float* hi) const {
    const int hd = shape_.head_dim;
    float best = -INFINITY;
    for (int j = 0; j < q.n_group; ++j) {
      const float* qh = q.q + static_cast<size_t>(j) * hd;
      float ub = 0.0f;
      for (int c = 0; c < hd; ++c) ub += std::max(qh[c] * lo[c], qh[c] * hi[c]);
      best = std::max(best, ub);
    }
    return best;
  }

 private:
  struct Boxes {
    std::vector<float> lo, hi;  // [pages of capacity, head_dim] per-channel min / max of keys
    int n_pages = 0;            // pages holding written slots
  };
  // Box of page p over its slots below `last` (written so far), from the cache.
  void rebox(const KvCache& cache, int layer, int g, int p, int last, Boxes& b) const {
    const int hd = shape_.head_dim;
    float* lo = b.lo.data() + static_cast<size_t>(p) * hd;  // [head_dim]
    float* hi = b.hi.data() + static_cast<size_t>(p) * hd;
    struct KeyScratch {
      std::vector<float> key;  // [head_dim]
    };
    std::vector<float>& key = workspace_object<KeyScratch>().key;
    key.resize(hd);
    const int s1 = std::min(last, (p + 1) * page_);
    for (int s = p * page_; s < s1; ++s) {
      key_row(cache, layer, g, s, key.data());
      for (int c = 0; c < hd; ++c) {
        lo[c] = s == p * page_ ? key[c] : std::min(lo[c], key[c]);
        hi[c] = s == p * page_ ? key[c] : std::max(hi[c], key[c]);
      }
    }
  }
  Boxes& boxes(int layer, int g) {
    return boxes_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }
  const Boxes& boxes(int layer, int g) const {
    return boxes_[static_cast<size_t>(layer_row_[layer]) * shape_.n_kv_heads + g];
  }

  AttnShape shape_;
  double budget_;
  int page_;
  std::set<int> dense_;
  std::vector<int> layer_row_;  // [n_layers] index among the global layers, -1 sliding-window
  std::vector<Boxes> boxes_;    // [n_global, n_kv_heads]
  size_t row_bytes_ = 0;        // of the cache: a box's min and max count as two key rows
};

}  // namespace

const OptionTable& quest_options() {
  static const OptionTable
      t{"quest",
        {
            kBudgetRow,
            {"page", OptionType::Count, "P", "16", "slots per page (at least 1)"},
            {"dense_layers", OptionType::LayerSet, "L1+L2|none", "0+1",
             "global layers attended densely (Quest's setting: the first two)"},
        }};
  return t;
}

std::unique_ptr<AttentionPolicy> make_quest_policy(const PolicyContext& ctx,
                                                   const PolicyOptions& opts) {
  const ParsedOptions o(quest_options(), opts, ctx.shape);
  const int page = o.count("page");
  if (page < 1) fail("policy 'quest': page must be at least 1 slot (got '{}')", opts.at("page"));
  return std::make_unique<QuestPolicy>(ctx.shape, o.budget("budget"), page,
                                       o.layers("dense_layers"));
}

}  // namespace fasa
