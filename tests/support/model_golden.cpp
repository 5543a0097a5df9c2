#include "support/model_golden.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "fasa/engine/generate.h"
#include "fasa/engine/sampler.h"
#include "fasa/engine/session.h"
#include "fasa/eval/perplexity.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/golden_agreement.h"

namespace fasa::test {

namespace {

const nlohmann::json& goldens(const ModelGolden& m) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(m.goldens);
  if (it != cache.end()) return it->second;
  std::ifstream in(std::string(FASA_TEST_DATA_DIR) + "/model/" + m.goldens);
  EXPECT_TRUE(in.good()) << "missing tests/data/model/" << m.goldens;
  return cache[m.goldens] = in.good() ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// One load per model and test process.
std::shared_ptr<const Model> model_at(const std::string& path) {
  static std::map<std::string, std::shared_ptr<const Model>> cache;
  std::shared_ptr<const Model>& m = cache[path];
  if (!m) m = Model::load(path);
  return m;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Where our top-1 and the reference's part although the reference's leads by >= 0.5 logits,
// agreement by the reference's margin, on the range scripts/dev/llamacpp_self_agreement.py
// measures llama.cpp's own noise on, and the running perplexity after each chunk (when the
// goldens have the reference's per chunk).
void print_agreement_detail(const nlohmann::json& g, const PplResult& r) {
  const int n_ctx = g["n_ctx"], n_chunks = g["n_chunks"];
  const double edges[] = {0.0, 0.1, 0.25, 0.5, 1.0, 2.0};
  constexpr int kBins = 6;
  int agree_bin[kBins] = {}, total_bin[kBins] = {};
  for (int c = 0; c < n_chunks; ++c) {
    const auto ref = g["chunks"][c]["argmax"].get<std::vector<int32_t>>();
    const auto margin = g["chunks"][c]["margin"].get<std::vector<double>>();
    for (int i = 0; i < n_ctx; ++i) {
      const int32_t ours = r.argmax[static_cast<size_t>(c) * n_ctx + i];
      const bool same = ours == ref[i];
      if (!same && margin[i] >= 0.5) {
        std::printf("  mismatch at chunk %d pos %d: %d vs reference %d (reference margin %.4f)\n",
                    c, i, ours, ref[i], margin[i]);
      }
      int b = kBins - 1;
      while (b > 0 && margin[i] < edges[b]) --b;
      agree_bin[b] += same;
      ++total_bin[b];
    }
  }
  for (int b = 0; b < kBins; ++b) {
    std::printf("  reference margin in [%.2f, %s): agreement %.4f (%d/%d)\n", edges[b],
                b + 1 < kBins ? std::to_string(edges[b + 1]).substr(0, 4).c_str() : "inf",
                total_bin[b] ? static_cast<double>(agree_bin[b]) / total_bin[b] : 1.0, agree_bin[b],
                total_bin[b]);
  }
  const auto ref = g["chunks"][0]["argmax"].get<std::vector<int32_t>>();
  const int n = std::min(512, n_ctx);
  int a = 0;
  for (int i = 0; i < n; ++i) a += r.argmax[static_cast<size_t>(i)] == ref[i];
  std::printf("  chunk 0, first %d positions: agreement %.4f (%d/%d)\n", n,
              static_cast<double>(a) / n, a, n);
  if (!g["chunks"][0].contains("ppl")) return;  // per-chunk perplexities: Qwen's goldens only
  double ref_log_sum = 0.0;
  for (int c = 0; c < n_chunks; ++c) {
    ref_log_sum += std::log(g["chunks"][c]["ppl"].get<double>());
    std::printf("  after chunk %d: ppl %.4f vs reference %.4f\n", c, r.chunk_ppl[c],
                std::exp(ref_log_sum / (c + 1)));
  }
}

}  // namespace

void check_teacher_forced(const ModelGolden& m, const std::string& model_path,
                          const std::string& text_path) {
  const nlohmann::json& g = goldens(m);
  const auto model = model_at(model_path);
  if (m.n_windowed_layers >= 0) {
    ASSERT_EQ(model->config().n_windowed_layers(), m.n_windowed_layers);
  }
  if (g.contains("n_vocab")) {
    ASSERT_EQ(model->config().n_vocab, g["n_vocab"].get<int>());
  }
  if (g.contains("add_bos")) {  // the reference scored the tokens as given (chunk_bos stays -1)
    ASSERT_FALSE(g["add_bos"].get<bool>());
  }
  const std::vector<int32_t> tokens = g["tokens"].get<std::vector<int32_t>>();
  const int n_ctx = g["n_ctx"], n_chunks = g["n_chunks"];
  ASSERT_EQ(static_cast<int>(tokens.size()), n_ctx * n_chunks);
  // `fasa eval ppl --text` tokenizes the file itself (starting every chunk with BOS when the
  // goldens do): the same tokens as the reference's.
  {
    const Tokenizer& tok = model->require_tokenizer();
    auto ours = tok.encode(read_text(text_path), true, false);
    ASSERT_GE(ours.size(), tokens.size());
    ours.resize(tokens.size());
    if (m.bos_per_chunk) {
      for (int c = 0; c < n_chunks; ++c) ours[static_cast<size_t>(c) * n_ctx] = tok.bos_id();
    }
    EXPECT_EQ(ours, tokens);
  }
  PplOptions o;
  o.n_ctx = n_ctx;
  o.n_chunks = n_chunks;
  const PplResult r = perplexity(model, tokens, o, nullptr);
  const GoldenAgreement ag = golden_agreement(g, r.argmax);
  const double ref_ppl = g["ppl"];
  std::printf(
      "top-1 agreement %.4f (%d/%d); where reference margin >= 0.5: %.4f (%d/%d); "
      "ppl %.4f vs reference %.4f (%+.3f%%); %.1f s\n",
      ag.overall(), ag.agree, ag.total, ag.confident(), ag.agree_conf, ag.total_conf, r.ppl,
      ref_ppl, 100.0 * (r.ppl / ref_ppl - 1.0), r.seconds);
  print_agreement_detail(g, r);
  EXPECT_GE(ag.overall(), m.min_agreement);
  EXPECT_GE(ag.confident(), m.min_agreement_confident);
  EXPECT_NEAR(r.ppl / ref_ppl, 1.0, m.ppl_ratio_tol);
}

void check_sampled_logits(const ModelGolden& m, const std::string& model_path) {
  const nlohmann::json& g = goldens(m);
  const auto model = model_at(model_path);
  const std::vector<int32_t> all = g["tokens"].get<std::vector<int32_t>>();
  const int n_ctx = g["n_ctx"];
  const int n_vocab = model->config().n_vocab;
  std::vector<nlohmann::json> samples;  // chunk 0's sampled positions that are checked
  for (const auto& e : g["chunks"][0]["top16"]) {
    if (m.logits_pos_end == 0 || e["pos"].get<int>() < m.logits_pos_end) samples.push_back(e);
  }
  ASSERT_FALSE(samples.empty());
  SessionOptions so;
  so.n_ctx = n_ctx;
  Session s(model, so);
  // Chunk 0 in batches, keeping only the sampled rows: a whole chunk's logits may not fit
  // (Qwen: 2048 x 151,936 floats, 1.2 GB).
  const int last = samples.back()["pos"].get<int>() + 1;
  std::vector<std::vector<float>> rows(static_cast<size_t>(last));
  for (int i0 = 0; i0 < last; i0 += m.logits_batch) {
    const int i1 = std::min(last, i0 + m.logits_batch);
    const auto logits =  // [i1 - i0, n_vocab]
        s.eval_all(std::vector<int32_t>(all.begin() + i0, all.begin() + i1), m.logits_batch);
    for (const auto& e : samples) {
      const int pos = e["pos"];
      if (pos < i0 || pos >= i1) continue;
      const float* row = logits.data() + static_cast<size_t>(pos - i0) * n_vocab;
      rows[static_cast<size_t>(pos)].assign(row, row + n_vocab);
    }
  }
  double worst = 0.0, sum = 0.0;
  int n = 0, top1_same = 0;
  for (const auto& e : samples) {
    const auto ids = e["ids"].get<std::vector<int32_t>>();
    const auto ref = e["logits"].get<std::vector<double>>();
    const auto& row = rows[static_cast<size_t>(e["pos"].get<int>())];
    top1_same += argmax(row.data(), n_vocab) == ids[0];
    for (size_t k = 0; k < ids.size(); ++k) {
      const double d = std::fabs(row[static_cast<size_t>(ids[k])] - ref[k]);
      worst = std::max(worst, d);
      sum += d;
      ++n;
    }
  }
  std::printf(
      "max |logit - reference| over sampled top-16 (%zu positions): %.4f (mean %.4f); "
      "top-1 equal at %d of them\n",
      samples.size(), worst, sum / n, top1_same);
  EXPECT_LT(worst, m.logit_tol);
}

void check_chat_greedy(const ModelGolden& m, const std::string& model_path) {
  const nlohmann::json& g = goldens(m);
  const auto model = model_at(model_path);
  const Tokenizer& tok = model->require_tokenizer();
  const std::string rendered =
      render_chat(detect_chat_format(model->file()), {{"user", m.chat_user}}, true,
                  chat_default_system(model->file()));
  EXPECT_EQ(rendered, g["chat_prompt"].get<std::string>());
  const auto prompt = tok.encode(rendered, true, true);
  EXPECT_EQ(prompt, g["chat_prompt_tokens"].get<std::vector<int32_t>>());
  SessionOptions so;
  so.n_ctx = 256;
  Session s(model, so);
  GenerateOptions go;
  go.n_predict = 24;
  go.sampler.temp = 0.0f;
  const GenerateResult r = generate(s, prompt, go, nullptr);
  // The reference's tokens may end with the end-of-turn token, which generate() stops at but
  // does not return.
  const auto want = g["chat_greedy_tokens"].get<std::vector<int32_t>>();
  std::vector<int32_t> got = r.tokens;
  if (r.stop_reason == StopReason::Eos && !want.empty() && tok.is_eog(want.back())) {
    got.push_back(want.back());
  }
  size_t same = 0;
  while (same < want.size() && same < got.size() && want[same] == got[same]) ++same;
  std::printf("greedy answer: %s [%s] (first %zu of %zu tokens as llama.cpp's)\n", r.text.c_str(),
              name(r.stop_reason), same, want.size());
  ASSERT_FALSE(got.empty());
  if (m.greedy_exact) {
    EXPECT_EQ(got, want) << r.text;
  } else {
    EXPECT_EQ(got[0], want[0]) << r.text;
  }
  // The whole recorded answer, teacher-forced (each step fed the reference's token): every one
  // of its tokens is our top-1, or within a near-tie of it, where free-running greedy answers
  // may part ways.
  Session tf(model, so);
  const GreedyCheck c = teacher_forced_greedy(tf, prompt, want);
  std::printf("teacher-forced over the whole answer: %s\n", c.report().c_str());
  EXPECT_TRUE(within_near_tie(c, want));
}

}  // namespace fasa::test
