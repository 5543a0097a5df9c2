// `fasa eval ppl -m MODEL --text FILE --ctx N [--chunks K] [--decode D] [--policy P] [--json]`:
// perplexity over K consecutive chunks of N tokens, scoring the second half of each
// (llama-perplexity convention), or with --decode D the last D tokens of each chunk,
// teacher-forced one decode step at a time with the policy active (the paper's protocol).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/calibration.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/eval/perplexity.h"
#include "fasa/eval/recall.h"
#include "fasa/eval/task_json.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/tokenizer.h"
#include "provenance.h"

namespace fasa::cli {

namespace {

struct PplArgs {
  std::string model;
  std::string text;
  int n_ctx = 512;
  int n_chunks = 0;
  int n_decode = 0;
  int batch = 512;
  int threads = 0;
  std::string kv_type = "f16";
  PolicyArgs policy;
  bool json = false;
};

nlohmann::ordered_json ppl_json(const PplArgs& a, const Model& model, const PplOptions& o,
                                const PplResult& r) {
  nlohmann::ordered_json j = ppl_result_json(model.file().path(), a.text, a.kv_type, o, r);
  add_provenance(j, model.file().path(), r.policy, a.text);
  return j;
}

void run_ppl(const PplArgs& a) {
  apply_threads(a.threads);
  const std::string text = read_text_file(a.text);
  auto model = load_model(a.model);
  const Tokenizer& tok = model->require_tokenizer();
  const auto tokens = tok.encode(text, true, false);
  PplOptions o;
  if (tok.adds_bos() && tok.bos_id() >= 0) o.chunk_bos = tok.bos_id();  // as llama-perplexity
  o.n_ctx = a.n_ctx;
  o.n_chunks = a.n_chunks;
  o.n_decode = a.n_decode;
  o.batch = a.batch;
  o.kv_type = parse_kv_type(a.kv_type);
  o.policy = resolved_spec(a.policy.spec(), model);
  o.compare = resolved_specs(a.policy.compare, model);
  const std::vector<PplResult> rs = perplexity_all(model, tokens, o, [&](int done, int total) {
    std::fprintf(stderr, "\rfasa: chunk %d/%d", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  });
  if (a.json) {
    if (rs.size() == 1) {
      std::printf("%s\n", ppl_json(a, *model, o, rs[0]).dump().c_str());
      return;
    }
    nlohmann::ordered_json j;
    j["results"] = nlohmann::ordered_json::array();
    for (const PplResult& r : rs) j["results"].push_back(ppl_json(a, *model, o, r));
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  if (rs.size() == 1) {
    const PplResult& r = rs[0];
    for (int c = 0; c < r.n_chunks; ++c) std::printf("[%d] %.4f\n", c + 1, r.chunk_ppl[c]);
    std::printf("PPL = %.4f +/- %.4f  (%d chunks of %d tokens, %lld scored, %.1f s)\n", r.ppl,
                r.ppl_se, r.n_chunks, a.n_ctx, static_cast<long long>(r.n_scored), r.seconds);
    std::fprintf(stderr, "fasa: peak RSS %s\n", human_bytes(peak_rss_bytes()).c_str());
    return;
  }
  std::printf("%d chunks of %d tokens, last %d scored as decode steps (%.1f s)\n", rs[0].n_chunks,
              a.n_ctx, a.n_decode, rs[0].seconds);
  const ModelConfig& mc = model->config();
  const bool hybrid = mc.n_windowed_layers() > 0;
  if (hybrid) {
    std::printf(
        "rows read: by the %d global layers, the policy's; the %d sliding-window layers "
        "read their window at every step\n",
        mc.n_layers - mc.n_windowed_layers(), mc.n_windowed_layers());
  }
  std::printf("\n| policy | PPL | ± | vs first | %s |\n| --- | ---: | ---: | ---: | ---: |\n",
              hybrid ? "rows read (global layers)" : "rows read");
  for (const PplResult& r : rs) {
    std::printf("| %s | %.4f | %.4f | %+.2f%% | %.1f%% |\n", r.policy.c_str(), r.ppl, r.ppl_se,
                100.0 * (r.ppl / rs[0].ppl - 1.0), 100.0 * r.attn.global_read_fraction());
  }
}

struct RecallArgs {
  std::string model;
  std::string text;
  int n_ctx = 1024;
  int steps = 32;
  int threads = 0;
  std::string kv_type = "f16";
  PolicyArgs policy;
  bool json = false;
};

// Per evaluated layer (r.layers), the mean over its query heads.
std::vector<double> per_layer(const RecallResult& r, const std::vector<double>& head_values) {
  std::vector<double> v(r.layers.size());
  for (size_t l = 0; l < r.layers.size(); ++l) {
    for (int h = 0; h < r.n_heads; ++h) v[l] += head_values[l * r.n_heads + h] / r.n_heads;
  }
  return v;
}

nlohmann::ordered_json recall_json(const RecallArgs& a, const Model& model, const RecallResult& r) {
  nlohmann::ordered_json j;
  j["model"] = model.file().path();
  j["text"] = a.text;
  j["policy"] = r.policy;
  j["n_ctx"] = a.n_ctx;
  j["steps"] = a.steps;
  j["budget"] = r.budget_last;
  j["recall"] = r.mean_recall;
  j["attention_mass"] = r.mean_mass;
  j["kl"] = r.mean_kl;
  j["dense_fraction"] = r.dense_fraction;
  j["kv_bytes_read_per_token"] = r.kv_bytes_read_per_token;
  j["dense_kv_bytes_read_per_token"] = r.dense_kv_bytes_read_per_token;
  // The layers evaluated: the global ones (sliding-window layers run no policy). layer_* and
  // head_* follow this order.
  j["layers"] = r.layers;
  j["sliding_window_layers"] = r.n_layers - static_cast<int>(r.layers.size());
  j["layer_recall"] = per_layer(r, r.recall);
  j["layer_mass"] = per_layer(r, r.mass);
  j["head_recall"] = r.recall;
  j["head_mass"] = r.mass;
  j["kl_per_step"] = r.kl;
  j["seconds"] = r.seconds;
  add_provenance(j, model.file().path(), r.policy, a.text);
  return j;
}

void run_recall(const RecallArgs& a) {
  apply_threads(a.threads);
  const std::string text = read_text_file(a.text);
  auto model = load_model(a.model);
  const auto tokens = model->require_tokenizer().encode(text, true, false);
  RecallOptions o;
  o.n_ctx = a.n_ctx;
  o.steps = a.steps;
  o.policy = resolved_spec(a.policy.spec(), model);
  o.compare = resolved_specs(a.policy.compare, model);
  o.kv_type = parse_kv_type(a.kv_type);
  const std::vector<RecallResult> rs =
      evaluate_recall_all(model, tokens, o, [](int done, int total) {
        std::fprintf(stderr, "\rfasa: step %d/%d", done, total);
        if (done == total) std::fprintf(stderr, "\n");
      });
  if (a.json) {
    if (rs.size() == 1) {
      std::printf("%s\n", recall_json(a, *model, rs[0]).dump().c_str());
      return;
    }
    nlohmann::ordered_json j;
    j["results"] = nlohmann::ordered_json::array();
    for (const RecallResult& r : rs) j["results"].push_back(recall_json(a, *model, r));
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("context %d, %d steps, budget %d slots (sparse layers; KL over every step)\n",
              a.n_ctx, a.steps, rs[0].budget_last);
  if (const RecallResult& r = rs[0]; static_cast<int>(r.layers.size()) < r.n_layers) {
    std::printf(
        "evaluated: the %zu global layers %s of %d; the %d sliding-window layers attend "
        "over their window, outside any policy (KL still covers the whole model)\n",
        r.layers.size(), layer_list_text(r.layers).c_str(), r.n_layers,
        r.n_layers - static_cast<int>(r.layers.size()));
  }
  std::printf("\n");
  std::printf(
      "| policy | recall vs oracle top-B | attention mass | KL(full‖policy) nats | dense "
      "head-steps |\n| --- | ---: | ---: | ---: | ---: |\n");
  for (const RecallResult& r : rs) {
    std::printf("| %s | %.4f | %.4f | %.5f | %.1f%% |\n", r.policy.c_str(), r.mean_recall,
                r.mean_mass, r.mean_kl, 100.0 * r.dense_fraction);
  }
  std::printf("\n| layer |");
  for (size_t p = 0; p < rs.size(); ++p) std::printf(" recall %zu | mass %zu |", p + 1, p + 1);
  std::printf("\n| ---: |");
  for (size_t p = 0; p < rs.size(); ++p) std::printf(" ---: | ---: |");
  std::printf("\n");
  std::vector<std::vector<double>> lr, lm;
  for (const RecallResult& r : rs) {
    lr.push_back(per_layer(r, r.recall));
    lm.push_back(per_layer(r, r.mass));
  }
  for (size_t l = 0; l < rs[0].layers.size(); ++l) {
    std::printf("| %d |", rs[0].layers[l]);
    for (size_t p = 0; p < rs.size(); ++p) std::printf(" %.4f | %.4f |", lr[p][l], lm[p][l]);
    std::printf("\n");
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* ev = app.add_subcommand("eval", "evaluate a model");
  ev->require_subcommand(1);
  auto a = std::make_shared<PplArgs>();
  auto* cmd = ev->add_subcommand("ppl", "perplexity over consecutive chunks of a text");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_option("--text", a->text, "UTF-8 text file")->required();
  cmd->add_option("-c,--ctx,--ctx-size", a->n_ctx, "chunk length in tokens")->capture_default_str();
  cmd->add_option("--chunks", a->n_chunks, "chunks to score (0 = all)")->capture_default_str();
  cmd->add_option("--decode", a->n_decode,
                  "score the last D tokens of each chunk as policy-driven decode steps (0 = off)")
      ->capture_default_str();
  cmd->add_option("-b,--batch", a->batch, "tokens per forward pass")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0")
      ->capture_default_str();
  add_policy_options(cmd, a->policy, /*with_compare=*/true);
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_ppl(*a); });

  auto r = std::make_shared<RecallArgs>();
  auto* rc = ev->add_subcommand("recall", "selection quality of a policy against the oracle");
  rc->add_option("-m,--model", r->model, "GGUF path or pulled model name")->required();
  rc->add_option("--text", r->text, "UTF-8 text file")->required();
  rc->add_option("-c,--ctx,--ctx-size", r->n_ctx, "dense prefill length")->capture_default_str();
  rc->add_option("--steps", r->steps, "decode steps measured")->capture_default_str();
  rc->add_option("-t,--threads", r->threads, "threads (0 = all cores)")->capture_default_str();
  rc->add_option("--kv-type", r->kv_type, "KV cache type: f16, f32 or q8_0")->capture_default_str();
  add_policy_options(rc, r->policy, /*with_compare=*/true);
  rc->add_flag("--json", r->json, "print one JSON object");
  rc->callback([r] { run_recall(*r); });

  add_tasks_commands(app, ev);
  add_sweep_commands(ev);
  add_compare_commands(ev);
}

}  // namespace fasa::cli
