#include "fasa/eval/recall.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "fasa/attention/policy_facets.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/engine/session.h"
#include "fasa/eval/perplexity.h"
#include "fasa/eval/shared_prefill.h"
#include "fasa/kernels/attend.h"
#include "fasa/kernels/ops.h"
#include "fasa/kernels/topk.h"

namespace fasa {

namespace {

// Passes the inner policy's selections through unchanged while scoring them per query head.
// It sees the global layers only (the driver runs sliding-window layers without a policy).
// It passes on the inner policy's probabilities, prefill queries and online calibration, and
// nothing else of its facets (its cache is the plain one, it frees no row and does not rewind).
class SelectionProbe final : public AttentionPolicy,
                             public ProbabilityObserver,
                             public PrefillObserver,
                             public OnlineCalibrationReport {
 public:
  SelectionProbe(std::unique_ptr<AttentionPolicy> inner, const AttnShape& shape, double budget)
      : inner_(std::move(inner)),
        inner_probs_(facet<ProbabilityObserver>(*inner_)),
        inner_prefill_(facet<PrefillObserver>(*inner_)),
        inner_online_(facet<OnlineCalibrationReport>(*inner_)),
        shape_(shape),
        budget_(budget),
        layers_(shape.global_layers()),
        layer_row_(shape.n_layers, -1),
        recall_(layers_.size() * shape.n_heads, 0.0),
        mass_(recall_.size(), 0.0),
        count_(recall_.size(), 0),
        dense_(recall_.size(), 0) {
    for (size_t i = 0; i < layers_.size(); ++i) layer_row_[layers_[i]] = static_cast<int>(i);
  }

  // The inner policy's name, so that prefix copies between probes follow its rules.
  std::string_view name() const override { return inner_->name(); }
  bool offers(Facet f) const override {
    switch (f) {
      case Facet::Probs: return inner_probs_ != nullptr;
      case Facet::Prefill: return inner_prefill_ != nullptr;
      case Facet::OnlineCalibration: return inner_online_ != nullptr;
      default: return false;
    }
  }
  bool needs_prefill_queries() const override { return inner_prefill_->needs_prefill_queries(); }
  const OnlineCalibrationInfo& online_calibration() const override {
    return inner_online_->online_calibration();
  }
  void on_prefill_queries(const KvCache& c, int layer, int first, int n, const float* q) override {
    inner_prefill_->on_prefill_queries(c, layer, first, n, q);
  }
  void copy_prefill_state_from(const AttentionPolicy& src) override {
    const auto* probe = dynamic_cast<const SelectionProbe*>(&src);
    inner_prefill_->copy_prefill_state_from(probe ? *probe->inner_ : src);
  }
  void on_append(const KvCache& c, int layer, int first, int n) override {
    inner_->on_append(c, layer, first, n);
  }
  void on_probs(int layer, int head, const Selection& sel, const float* p, int n) override {
    inner_probs_->on_probs(layer, head, sel, p, n);
  }

  void select(const AttnQuery& q, Selection& out) override {
    inner_->select(q, out);
    measure(q, out);
  }
  // The inner policy's own layer call (online calibration makes its calibration there).
  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {
    inner_->select_layer(qs, n, outs);
    parallel_for(n, [&](int64_t g) { measure(qs[g], outs[g]); });
  }

 private:
  // Recall and mass of one group's selection against the exact top-k (concurrent per group).
  void measure(const AttnQuery& q, const Selection& out) {
    const int n = q.n_visible, hd = shape_.head_dim;
    const int k = budget_ > 0.0 ? resolve_budget(budget_, n) : n;
    last_budget_ = k;
    const KvRows rows{q.cache->k_rows(q.layer, q.kv_head), q.cache->v_rows(q.layer, q.kv_head),
                      q.cache->type(), hd};
    ScratchFrame f;
    float* logits = f.take<float>(n);  // [n]
    FASA_CHECK(layer_row_[q.layer] >= 0);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int j = 0; j < q.n_group; ++j) {
      const size_t row =
          static_cast<size_t>(layer_row_[q.layer]) * shape_.n_heads + q.kv_head * q.n_group + j;
      qk_scores(q.q + j * hd, rows, nullptr, n, logits);
      const HeadMeasure m =
          measure_head(logits, n, k, scale, out.all ? nullptr : &out.slots_for(j));
      if (out.all) dense_[row] += 1;
      recall_[row] += m.recall;
      mass_[row] += m.mass;
      count_[row] += 1;
    }
  }

  // Read by recall_of below.
 public:
  std::unique_ptr<AttentionPolicy> inner_;
  ProbabilityObserver* inner_probs_;  // inner_'s facets, or null
  PrefillObserver* inner_prefill_;
  const OnlineCalibrationReport* inner_online_;
  AttnShape shape_;
  double budget_;
  std::vector<int> layers_;            // [n_global] the layers measured
  std::vector<int> layer_row_;         // [n_layers] index in layers_, -1 for sliding-window layers
  std::vector<double> recall_, mass_;  // [n_global, n_heads] sums
  std::vector<int64_t> count_, dense_;
  int last_budget_ = 0;
};

}  // namespace

HeadMeasure measure_head(const float* logits, int n, int k, float scale,
                         const std::vector<int32_t>* selected) {
  HeadMeasure m;
  if (!selected) return m;  // dense: every slot, the oracle's among them
  struct MeasureScratch {
    std::vector<float> p;      // [n]
    std::vector<int32_t> top;  // [k] the oracle's slots
  };
  MeasureScratch& sc = workspace_object<MeasureScratch>();
  auto& p = sc.p;
  auto& top = sc.top;
  top_k_indices(logits, n, k, top);
  p.assign(logits, logits + n);
  for (float& x : p) x *= scale;
  softmax_inplace(p.data(), n);
  double mass = 0.0;
  for (int32_t t : *selected) mass += p[t];
  m.recall = static_cast<double>(sorted_overlap(*selected, top)) / k;
  m.mass = mass;
  return m;
}

double kl_of_logits(const float* p_logits, const float* q_logits, int n_vocab) {
  const double zp = log_prob(p_logits, n_vocab, 0) - p_logits[0];  // -log Σ exp(p_logits)
  const double zq = log_prob(q_logits, n_vocab, 0) - q_logits[0];
  double kl = 0.0;
  for (int v = 0; v < n_vocab; ++v) {
    const double lp = p_logits[v] + zp;
    kl += std::exp(lp) * (lp - (q_logits[v] + zq));
  }
  return kl;
}

namespace {

// One probe per spec, wrapping the spec's policy; the oracle's size is its budget option.
std::vector<std::unique_ptr<SelectionProbe>> make_probes(const std::vector<std::string>& specs,
                                                         const PolicyContext& ctx,
                                                         const AttnShape& shape) {
  std::vector<std::unique_ptr<SelectionProbe>> probes;
  for (const std::string& spec : specs) {
    std::string name;
    PolicyOptions popts;
    parse_policy_spec(spec, &name, &popts);
    double budget = 0.0;
    if (auto it = popts.find("budget"); it != popts.end()) budget = parse_budget(name, it->second);
    probes.push_back(
        std::make_unique<SelectionProbe>(make_policy(name, ctx, popts), shape, budget));
  }
  return probes;
}

void check_options(const std::vector<int32_t>& tokens, const RecallOptions& o,
                   const AttnShape& shape) {
  if (o.n_ctx < 1 || o.steps < 1) fail("--ctx and --steps must be >= 1");
  if (static_cast<int64_t>(tokens.size()) < int64_t{o.n_ctx} + o.steps) {
    fail("the text has {} tokens; --ctx + --steps = {} are needed", tokens.size(),
         int64_t{o.n_ctx} + o.steps);
  }
  if (shape.global_layers().empty()) {
    fail(
        "every layer of this model is a sliding-window layer: no policy runs, nothing to "
        "evaluate");
  }
}

// The teacher-forced steps, the dense reference and every policy's session in lockstep:
// KL(full ‖ policy) of each step's next-token distributions into results[p].kl.
void decode_steps(Session& full, const std::vector<std::unique_ptr<Session>>& sparse,
                  const std::vector<int32_t>& tokens, const RecallOptions& o,
                  std::vector<RecallResult>& results,
                  const std::function<void(int, int)>& progress) {
  const int n_vocab = full.model().config().n_vocab;
  for (int i = 0; i < o.steps; ++i) {
    const int32_t tok = tokens[o.n_ctx + i];
    const std::vector<float>& lf = full.decode(tok);  // [n_vocab]
    for (size_t p = 0; p < sparse.size(); ++p) {
      const std::vector<float>& ls = sparse[p]->decode(tok);  // [n_vocab]
      results[p].kl.push_back(kl_of_logits(lf.data(), ls.data(), n_vocab));
    }
    if (progress) progress(i + 1, o.steps);
  }
}

// A probe's sums as means. The means leave out the steps a head read every slot (a dense
// layer, or a budget that still covered the context): each counted recall 1 and mass 1.
void fill_measures(const SelectionProbe& probe, RecallResult& r) {
  r.layers = probe.layers_;
  const size_t n_rows = probe.count_.size();
  r.recall.resize(n_rows);
  r.mass.resize(n_rows);
  double rs = 0.0, ms = 0.0, dense = 0.0, total = 0.0, sparse_n = 0.0;
  for (size_t row = 0; row < n_rows; ++row) {
    const double c = static_cast<double>(probe.count_[row]);
    const double d = static_cast<double>(probe.dense_[row]);
    r.recall[row] = c > 0 ? probe.recall_[row] / c : 0.0;
    r.mass[row] = c > 0 ? probe.mass_[row] / c : 0.0;
    dense += d;
    total += c;
    rs += probe.recall_[row] - d;
    ms += probe.mass_[row] - d;
    sparse_n += c - d;
  }
  r.mean_recall = sparse_n > 0 ? rs / sparse_n : 1.0;
  r.mean_mass = sparse_n > 0 ? ms / sparse_n : 1.0;
  double kls = 0.0;
  for (double x : r.kl) kls += x;
  r.mean_kl = kls / r.kl.size();
  r.dense_fraction = total > 0 ? dense / total : 0.0;
  r.budget_last = probe.last_budget_;
}

}  // namespace

std::vector<RecallResult> evaluate_recall_all(const std::shared_ptr<const Model>& model,
                                              const std::vector<int32_t>& tokens,
                                              const RecallOptions& o,
                                              const std::function<void(int, int)>& progress) {
  const ModelConfig& mc = model->config();
  const AttnShape shape{mc.n_layers, mc.n_heads, mc.n_kv_heads, mc.head_dim, mc.layer_window};
  check_options(tokens, o, shape);
  std::vector<std::string> specs{o.policy};
  specs.insert(specs.end(), o.compare.begin(), o.compare.end());
  const PolicyContext ctx = policy_context(model);
  const std::vector<std::unique_ptr<SelectionProbe>> probes = make_probes(specs, ctx, shape);

  SessionOptions so;
  so.n_ctx = o.n_ctx + o.steps;
  so.kv_type = o.kv_type;
  const SharedPrefill shared(model, specs, so, ctx);
  // The reference: full attention, watched during its prefill for the policies that learn from
  // the prefill queries (eval/shared_prefill.h; it attends densely all the same).
  PromptPrefill prompt(shared, std::vector<int32_t>(tokens.begin(), tokens.begin() + o.n_ctx),
                       PromptPrefill::Sources::Started);
  std::vector<std::unique_ptr<Session>> sparse;  // [n_specs] each under its probe
  for (auto& probe : probes) {
    so.external_policy = probe.get();
    sparse.push_back(std::make_unique<Session>(model, so, ctx));
  }

  const auto t0 = std::chrono::steady_clock::now();
  Session& full = prompt.dense();
  // Every policy's session starts from a copy of it, except a prefill-aware one it did not
  // watch (another observation window): that copies from an earlier session of the same
  // policy, or prefills itself.
  for (size_t p = 0; p < sparse.size(); ++p) prompt.start(p, *sparse[p]);
  std::vector<RecallResult> results(specs.size());
  decode_steps(full, sparse, tokens, o, results, progress);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t p = 0; p < results.size(); ++p) {
    RecallResult& r = results[p];
    r.policy = specs[p];
    r.n_layers = mc.n_layers;
    r.n_heads = mc.n_heads;
    fill_measures(*probes[p], r);
    const AttnStats st = sparse[p]->attn_stats();
    const double n_tok = static_cast<double>(std::max<uint64_t>(st.decode_tokens, 1));
    r.kv_bytes_read_per_token = static_cast<double>(st.bytes_read()) / n_tok;
    r.dense_kv_bytes_read_per_token = static_cast<double>(st.dense_bytes) / n_tok;
    r.seconds = seconds;
  }
  return results;
}

RecallResult evaluate_recall(const std::shared_ptr<const Model>& model,
                             const std::vector<int32_t>& tokens, const RecallOptions& o,
                             const std::function<void(int, int)>& progress) {
  RecallOptions one = o;
  one.compare.clear();
  return evaluate_recall_all(model, tokens, one, progress)[0];
}

}  // namespace fasa
