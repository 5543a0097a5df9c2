#include "fasa/attention/policies/fasa_fcs.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "fasa/core/error.h"

namespace fasa {

namespace {

// A per-FC score of (layer, head) for the ranked criteria: [n_fc]
std::vector<double> fc_scores(const std::string& fcs, const Calibration& c, int l, int h) {
  std::vector<double> s(c.n_fc());
  for (int f = 0; f < c.n_fc(); ++f) {
    if (fcs == "mass") {
      const float* ci = c.channels(l, h);  // [head_dim]
      s[f] = static_cast<double>(ci[c.fcs[f].a] + ci[c.fcs[f].b]);
    } else {
      s[f] = c.ca(l, h)[f];
    }
  }
  return s;
}

// The mean over `heads` of their per-FC scores: [n_fc]
std::vector<double> mean_scores(const std::string& fcs, const Calibration& c, int l,
                                const std::vector<int>& heads) {
  std::vector<double> sum(c.n_fc(), 0.0);
  for (int h : heads) {
    const std::vector<double> s = fc_scores(fcs, c, l, h);
    for (int f = 0; f < c.n_fc(); ++f) sum[f] += s[f] / static_cast<double>(heads.size());
  }
  return sum;
}

// The n best FCs by score, ties to the lower FC id.
std::vector<int32_t> best_by(const std::vector<double>& score, int n) {
  std::vector<int32_t> all(score.size());
  std::iota(all.begin(), all.end(), 0);
  std::stable_sort(all.begin(), all.end(),
                   [&](int32_t x, int32_t y) { return score[x] > score[y]; });
  all.resize(n);
  return all;
}

// The n_tip FCs of the query heads `heads` of layer l (one head, or a group sharing a set).
std::vector<int32_t> chosen_fcs(const FcChoice& ch, const Calibration& c, int l,
                                const std::vector<int>& heads, int kv_head) {
  const int n_fc = c.n_fc(), n = ch.n_tip;
  std::vector<int32_t> fc(n);
  if (ch.fcs == "high") {  // FC 0 rotates fastest
    std::iota(fc.begin(), fc.end(), 0);
  } else if (ch.fcs == "low") {
    std::iota(fc.begin(), fc.end(), n_fc - n);
  } else if (ch.fcs == "random") {  // seeded per (layer, first head)
    std::vector<int32_t> all(n_fc);
    std::iota(all.begin(), all.end(), 0);
    std::mt19937 rng(static_cast<uint32_t>(l * 7919 + heads[0]));
    std::shuffle(all.begin(), all.end(), rng);
    fc.assign(all.begin(), all.begin() + n);
  } else if (ch.fcs == "compound") {
    // The greedy set's order, then (n_tip beyond the calibration's n_compound) the other FCs by
    // the (group's mean) CA.
    const int32_t* set =
        heads.size() == 1 ? c.compound_fcs(l, heads[0]) : c.group_compound_fcs(l, kv_head);
    fc.assign(set, set + std::min(n, c.n_compound));
    if (n > c.n_compound) {
      for (int32_t f : best_by(mean_scores("calibrated", c, l, heads), n_fc)) {
        if (static_cast<int>(fc.size()) == n) break;
        if (std::find(fc.begin(), fc.end(), f) == fc.end()) fc.push_back(f);
      }
    }
  } else {  // calibrated, mass: the (group's mean) score
    fc = best_by(mean_scores(ch.fcs, c, l, heads), n);
  }
  return fc;
}

}  // namespace

std::vector<std::vector<int>> fasa_head_dims(const AttnShape& shape, const FcChoice& ch,
                                             const Calibration& c) {
  FASA_CHECK(ch.n_tip >= 1 && ch.n_tip <= c.n_fc());
  const int ng = shape.n_group();
  std::vector<std::vector<int>> dims;
  for (int l : shape.global_layers()) {
    for (int h = 0; h < shape.n_heads; ++h) {
      std::vector<int> heads{h};
      if (ch.per_group) {
        heads.clear();
        for (int j = 0; j < ng; ++j) heads.push_back(h / ng * ng + j);
      }
      std::vector<int>& d = dims.emplace_back();
      for (int32_t f : chosen_fcs(ch, c, l, heads, h / ng)) {
        d.push_back(c.fcs[f].a);
        d.push_back(c.fcs[f].b);
      }
    }
  }
  return dims;
}

std::vector<double> calibrated_layer_weights(const AttnShape& shape, const Calibration& c,
                                             int n_tip, const std::set<int>& dense_layers) {
  FASA_CHECK(c.has_compound() && n_tip >= 1 && n_tip <= c.n_compound);
  std::vector<double> w(shape.n_layers, 0.0);
  double sum = 0.0;
  int n_sel = 0;
  for (int l : shape.global_layers()) {
    if (dense_layers.count(l)) continue;
    double agree = 0.0;
    for (int h = 0; h < shape.n_heads; ++h) agree += c.compound_cas(l, h)[n_tip - 1];
    w[l] = std::max(1.0 - agree / shape.n_heads, 1e-6);  // > 0 marks a selecting layer
    sum += w[l];
    n_sel += 1;
  }
  for (int l : shape.global_layers()) {
    if (dense_layers.count(l)) continue;
    w[l] = w[l] * n_sel / sum;
  }
  return w;
}

}  // namespace fasa
