#include "fasa/attention/online_calibration.h"

#include <algorithm>
#include <cmath>

#include "fasa/attention/compound_greedy.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"

namespace fasa {

QueryWindow::QueryWindow(const AttnShape& shape, int window, int spread)
    : shape_(shape),
      window_(window),
      spread_(spread),
      q_(shape.global_layers().size()),
      slots_(shape.global_layers().size()) {
  FASA_CHECK(window >= 1 && spread >= 0);
}

int64_t QueryWindow::stride(int newest) const {
  if (spread_ == 0) return 0;
  int64_t s = 1;  // multiples of s in [0, newest]: newest / s + 1
  while (newest / s + 1 > spread_) s *= 2;
  return s;
}

void QueryWindow::add(int layer_row, int first_slot, int n_tok, const float* q) {
  if (n_tok <= 0) return;
  const size_t per = static_cast<size_t>(shape_.n_heads) * shape_.head_dim;  // one query row
  std::vector<float>& qs = q_[layer_row];
  std::vector<int32_t>& slots = slots_[layer_row];
  const int64_t s = stride(first_slot + n_tok - 1);
  auto keeps_old = [s](int slot) { return s > 0 && slot % s == 0; };
  // This chunk's rows that are kept: the newest `window` and the spread ones before them.
  for (int t = 0; t < n_tok; ++t) {
    if (t < n_tok - window_ && !keeps_old(first_slot + t)) continue;
    qs.insert(qs.end(), q + t * per, q + (t + 1) * per);
    slots.push_back(first_slot + t);
  }
  // Rows held before that are now older than the newest `window`: keep the spread ones.
  const size_t old = slots.size() > static_cast<size_t>(window_) ? slots.size() - window_ : 0;
  size_t w = 0;  // rows kept so far, compacted in place
  for (size_t j = 0; j < slots.size(); ++j) {
    if (j < old && !keeps_old(slots[j])) continue;
    if (w != j) {
      slots[w] = slots[j];
      std::copy(qs.begin() + j * per, qs.begin() + (j + 1) * per, qs.begin() + w * per);
    }
    ++w;
  }
  slots.resize(w);
  qs.resize(w * per);
}

bool QueryWindow::full() const {
  for (const auto& s : slots_) {
    if (static_cast<int>(s.size()) < window_) return false;
  }
  return true;
}

const float* QueryWindow::query(int layer_row, int j, int head) const {
  return q_[layer_row].data() + (static_cast<size_t>(j) * shape_.n_heads + head) * shape_.head_dim;
}

uint64_t QueryWindow::bytes() const {
  uint64_t b = 0;
  for (size_t r = 0; r < q_.size(); ++r) {
    b += q_[r].size() * sizeof(float) + slots_[r].size() * sizeof(int32_t);
  }
  return b;
}

void QueryWindow::clear() {
  for (auto& q : q_) q.clear();
  for (auto& s : slots_) s.clear();
}

void QueryWindow::truncate(int n) {
  const size_t per = static_cast<size_t>(shape_.n_heads) * shape_.head_dim;
  for (size_t r = 0; r < slots_.size(); ++r) {
    size_t keep = slots_[r].size();
    while (keep > 0 && slots_[r][keep - 1] >= n) --keep;  // slots ascend
    slots_[r].resize(keep);
    q_[r].resize(keep * per);
  }
}

namespace {

Calibration online_header(const PolicyContext& ctx, const OnlineCalibrationSpec& spec,
                          const QueryWindow& w) {
  const AttnShape& sh = ctx.shape;
  Calibration c;
  c.model_name = "online";
  c.arch = ctx.arch;
  c.n_layers = sh.n_layers;
  c.n_heads = sh.n_heads;
  c.n_kv_heads = sh.n_kv_heads;
  c.head_dim = sh.head_dim;
  c.rope_layout = ctx.rope_layout;
  c.fc_layout = FcLayout::Rope;
  c.fcs = fc_dims(ctx.rope_layout, FcLayout::Rope, sh.head_dim, ctx.rope_dim);
  c.k = spec.k;
  c.n_samples = 1;
  c.steps = w.size(0);
  c.text_name = "online";
  c.layers = sh.global_layers();
  const size_t heads = c.layers.size() * sh.n_heads;
  c.mean_ca.assign(heads * c.n_fc(), 0.0f);
  c.channel_importance.assign(heads * sh.head_dim, 0.0f);
  c.n_compound = spec.agreement ? std::clamp(spec.n_compound, 0, c.n_fc()) : 0;
  c.compound.assign(spec.head_sets ? heads * c.n_compound : 0, 0);
  c.compound_ca.assign(c.compound.size(), 0.0f);
  c.group_compound.assign(c.layers.size() * sh.n_kv_heads * c.n_compound, 0);
  c.group_compound_ca.assign(c.group_compound.size(), 0.0f);
  return c;
}

// The keys of (layer, kv head) the window's queries saw, as f32: [n, head_dim]. A f32 cache's
// rows are used in place (keys then points into the cache); others are converted into `buf`.
const float* keys_f32(const KvCache& cache, int layer, int kv_head, int n,
                      std::vector<float>& buf) {
  const int hd = cache.shape().head_dim;
  const auto* rows = static_cast<const uint8_t*>(cache.k_rows(layer, kv_head));
  if (cache.type() == KvType::F32) return reinterpret_cast<const float*>(rows);
  buf.resize(static_cast<size_t>(n) * hd);
  parallel_for(n, [&](int64_t t) {
    kv_row_to_f32(rows + t * cache.row_bytes(), cache.type(), hd, buf.data() + t * hd);
  });
  return buf.data();
}

// One (layer row r, kv head g) job: mean CA and channel importance of the group's query heads,
// the group's compound set and, with spec.head_sets, each head's.
void calibrate_group(Calibration& c, const OnlineCalibrationSpec& spec, const QueryWindow& w,
                     const KvCache& cache, int r, int g) {
  const int hd = c.head_dim, ng = c.n_heads / c.n_kv_heads, n_fc = c.n_fc(), m = w.size(r);
  const int n = w.slot(r, m - 1) + 1;  // the newest query sees the most keys
  std::vector<float> buf;
  const float* keys = keys_f32(cache, c.layers[r], g, n, buf);  // [n, head_dim]
  std::vector<CaQuery> qs;  // [n_group * m] head by head, oldest query first
  for (int i = 0; i < ng; ++i) {
    const int h = g * ng + i;
    float* ci = c.channel_importance.data() + (static_cast<size_t>(r) * c.n_heads + h) * hd;
    for (int j = 0; j < m; ++j) {
      const float* q = w.query(r, j, h);
      const float* own = keys + static_cast<size_t>(w.slot(r, j)) * hd;  // its token's key
      for (int d = 0; d < hd; ++d) ci[d] += std::fabs(q[d] * own[d]) / m;
      qs.push_back(CaQuery{q, keys, w.slot(r, j) + 1});
    }
  }
  if (!spec.agreement) return;
  std::vector<float> single;  // [n_group * m, n_fc]
  const GreedySampling sampling{spec.key_sample, spec.top_sample};
  const CompoundSet set =
      greedy_compound_fcs_sampled(qs, hd, c.fcs, c.k, c.n_compound, sampling, &single);
  const size_t at = (static_cast<size_t>(r) * c.n_kv_heads + g) * c.n_compound;
  std::copy(set.fcs.begin(), set.fcs.end(), c.group_compound.begin() + at);
  std::copy(set.ca.begin(), set.ca.end(), c.group_compound_ca.begin() + at);
  for (int i = 0; i < ng; ++i) {
    const int h = g * ng + i;
    float* ca = c.mean_ca.data() + (static_cast<size_t>(r) * c.n_heads + h) * n_fc;
    for (int j = 0; j < m; ++j) {
      for (int f = 0; f < n_fc; ++f)
        ca[f] += single[(static_cast<size_t>(i) * m + j) * n_fc + f] / m;
    }
    if (!spec.head_sets || c.n_compound == 0) continue;
    const std::vector<CaQuery> own(qs.begin() + i * m, qs.begin() + (i + 1) * m);
    const CompoundSet hs = greedy_compound_fcs_sampled(own, hd, c.fcs, c.k, c.n_compound, sampling);
    const size_t hat = (static_cast<size_t>(r) * c.n_heads + h) * c.n_compound;
    std::copy(hs.fcs.begin(), hs.fcs.end(), c.compound.begin() + hat);
    std::copy(hs.ca.begin(), hs.ca.end(), c.compound_ca.begin() + hat);
  }
}

}  // namespace

Calibration calibrate_online(const PolicyContext& ctx, const OnlineCalibrationSpec& spec,
                             const QueryWindow& w, const KvCache& cache) {
  FASA_CHECK(!cache.any_evicted());  // rows are read as slots
  Calibration c = online_header(ctx, spec, w);
  const int n_global = static_cast<int>(c.layers.size());
  for (int r = 0; r < n_global; ++r) {
    if (w.size(r) == 0) fail("online calibration: layer {} saw no query", c.layers[r]);
  }
  c.tokens_per_sample = w.slot(0, w.size(0) - 1) + 1;
  // CA's top-K must leave keys out: a K of every key the queries saw makes every FC agree fully
  // and the ranking arbitrary (a prompt shorter than K). A quarter of the keys at most, the
  // ratio of fasa calibrate's defaults (K 256 of 1024 tokens).
  c.k = std::min(spec.k, std::max(1, c.tokens_per_sample / 4));
  // One (layer, kv head) after another: the greedy splits each group's queries over the threads
  // (a model with few global layers and kv heads still keeps every thread busy).
  for (int r = 0; r < n_global; ++r) {
    for (int g = 0; g < c.n_kv_heads; ++g) calibrate_group(c, spec, w, cache, r, g);
  }
  c.rank_all();
  return c;
}

}  // namespace fasa
