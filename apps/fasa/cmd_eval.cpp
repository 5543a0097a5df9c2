// `fasa eval ppl -m MODEL --text FILE --ctx N [--chunks K] [--decode D] [--policy P] [--json]`:
// perplexity over K consecutive chunks of N tokens, scoring the second half of each
// (llama-perplexity convention), or with --decode D the last D tokens of each chunk,
// teacher-forced one decode step at a time with the policy active (the paper's protocol).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/eval/perplexity.h"
#include "fasa/eval/recall.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/tokenizer.h"

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

void run_ppl(const PplArgs& a) {
  apply_threads(a.threads);
  const std::string text = read_text_file(a.text);
  auto model = load_model(a.model);
  const auto tokens = model->require_tokenizer().encode(text, true, false);
  PplOptions o;
  o.n_ctx = a.n_ctx;
  o.n_chunks = a.n_chunks;
  o.n_decode = a.n_decode;
  o.batch = a.batch;
  o.kv_type = parse_kv_type(a.kv_type);
  o.policy = a.policy.spec();
  const PplResult r = perplexity(model, tokens, o, [&](int done, int total) {
    std::fprintf(stderr, "\rfasa: chunk %d/%d", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  });
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = model->file().path();
    j["text"] = a.text;
    j["policy"] = a.policy.spec();
    j["kv_type"] = a.kv_type;
    j["n_ctx"] = a.n_ctx;
    j["n_decode"] = a.n_decode;
    j["n_chunks"] = r.n_chunks;
    j["n_tokens"] = r.n_tokens;
    j["n_scored"] = r.n_scored;
    j["ppl"] = r.ppl;
    j["ppl_se"] = r.ppl_se;
    j["mean_nll"] = r.mean_nll;
    j["chunk_ppl"] = r.chunk_ppl;
    j["decode_rows_read_fraction"] =
        r.attn.slots_visible ? static_cast<double>(r.attn.slots_read) / r.attn.slots_visible : 1.0;
    j["seconds"] = r.seconds;
    j["threads"] = num_threads();
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  for (int c = 0; c < r.n_chunks; ++c) std::printf("[%d] %.4f\n", c + 1, r.chunk_ppl[c]);
  std::printf("PPL = %.4f +/- %.4f  (%d chunks of %d tokens, %lld scored, %.1f s)\n", r.ppl,
              r.ppl_se, r.n_chunks, a.n_ctx, static_cast<long long>(r.n_scored), r.seconds);
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

void run_recall(const RecallArgs& a) {
  apply_threads(a.threads);
  const std::string text = read_text_file(a.text);
  auto model = load_model(a.model);
  const auto tokens = model->require_tokenizer().encode(text, true, false);
  RecallOptions o;
  o.n_ctx = a.n_ctx;
  o.steps = a.steps;
  o.policy = a.policy.spec();
  o.kv_type = parse_kv_type(a.kv_type);
  const RecallResult r = evaluate_recall(model, tokens, o, [](int done, int total) {
    std::fprintf(stderr, "\rfasa: step %d/%d", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  });
  std::vector<double> layer_recall(r.n_layers), layer_mass(r.n_layers);
  for (int l = 0; l < r.n_layers; ++l) {
    for (int h = 0; h < r.n_heads; ++h) {
      layer_recall[l] += r.recall[l * r.n_heads + h] / r.n_heads;
      layer_mass[l] += r.mass[l * r.n_heads + h] / r.n_heads;
    }
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = model->file().path();
    j["text"] = a.text;
    j["policy"] = o.policy;
    j["n_ctx"] = a.n_ctx;
    j["steps"] = a.steps;
    j["budget"] = r.budget_last;
    j["recall"] = r.mean_recall;
    j["attention_mass"] = r.mean_mass;
    j["kl"] = r.mean_kl;
    j["dense_fraction"] = r.dense_fraction;
    j["layer_recall"] = layer_recall;
    j["layer_mass"] = layer_mass;
    j["head_recall"] = r.recall;
    j["head_mass"] = r.mass;
    j["kl_per_step"] = r.kl;
    j["seconds"] = r.seconds;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("policy %s, context %d, %d steps, budget %d slots\n", o.policy.c_str(), a.n_ctx,
              a.steps, r.budget_last);
  std::printf("recall vs oracle top-B %.4f   attention mass %.4f   KL(full||policy) %.5f nats   "
              "(sparse layers; %.1f%% of head-steps dense)\n",
              r.mean_recall, r.mean_mass, r.mean_kl, 100.0 * r.dense_fraction);
  std::printf("\n| layer | recall | mass |\n| ---: | ---: | ---: |\n");
  for (int l = 0; l < r.n_layers; ++l) {
    std::printf("| %d | %.4f | %.4f |\n", l, layer_recall[l], layer_mass[l]);
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
  cmd->add_option("--ctx", a->n_ctx, "chunk length in tokens")->capture_default_str();
  cmd->add_option("--chunks", a->n_chunks, "chunks to score (0 = all)")->capture_default_str();
  cmd->add_option("--decode", a->n_decode,
                  "score the last D tokens of each chunk as policy-driven decode steps (0 = off)")
      ->capture_default_str();
  cmd->add_option("-b,--batch", a->batch, "tokens per forward pass")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16 or f32")->capture_default_str();
  add_policy_options(cmd, a->policy);
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_ppl(*a); });

  auto r = std::make_shared<RecallArgs>();
  auto* rc = ev->add_subcommand("recall", "selection quality of a policy against the oracle");
  rc->add_option("-m,--model", r->model, "GGUF path or pulled model name")->required();
  rc->add_option("--text", r->text, "UTF-8 text file")->required();
  rc->add_option("--ctx", r->n_ctx, "dense prefill length")->capture_default_str();
  rc->add_option("--steps", r->steps, "decode steps measured")->capture_default_str();
  rc->add_option("-t,--threads", r->threads, "threads (0 = all cores)")->capture_default_str();
  rc->add_option("--kv-type", r->kv_type, "KV cache type: f16 or f32")->capture_default_str();
  add_policy_options(rc, r->policy);
  rc->add_flag("--json", r->json, "print one JSON object");
  rc->callback([r] { run_recall(*r); });
}

}  // namespace fasa::cli
