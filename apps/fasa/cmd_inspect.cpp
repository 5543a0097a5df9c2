// `fasa inspect MODEL [--json]`: architecture, hyper-parameters, RoPE layout and base, context
// length, vocabulary and the tensor table (name, type, shape, bytes).
#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/model/family.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::cli {

namespace {

struct InspectArgs {
  std::string model;
  bool json = false;
};

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s;
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? " x " : "") + std::to_string(ne[i]);
  return s;
}

// The RoPE section: layout, base, scaling, and the frequencies a run at the trained context uses
// (the ones FASA's chunks rotate at).
nlohmann::ordered_json rope_json(const Model& model) {
  const ModelConfig& c = model.config();
  nlohmann::ordered_json j = {{"layout", rope_layout_name(c.rope_layout)},
                              {"base", c.rope_base},
                              {"dim", c.rope_dim},
                              {"n_fc", c.rope_dim / 2}};
  const RopeScaling& rs = c.rope_scaling;
  j["scaling"] = rope_scaling_name(rs.type);
  j["freq_scale"] = rs.freq_scale;
  j["original_context"] = rs.n_ctx_orig;
  j["attn_factor"] = rs.attn_factor;
  const RopeTable& rope = model.rope_table(c.n_ctx_train);
  j["factor_table"] = rope.factors;
  j["mscale"] = rope.mscale;
  j["freqs"] = rope.freqs;
  if (c.n_windowed_layers() > 0) j["base_local"] = c.rope_base_local;
  return j;
}

// Everything but the tensor table (`--json` adds it as "tensors").
nlohmann::ordered_json inspect_json(const Model& model) {
  const ModelConfig& c = model.config();
  const GgufFile& f = model.file();
  const Tokenizer* tok = model.tokenizer();
  nlohmann::ordered_json j;
  j["path"] = f.path();
  j["gguf_version"] = f.version();
  j["file_bytes"] = f.file_bytes();
  j["architecture"] = c.arch;
  j["name"] = c.name;
  j["family"] = model_family(f, c);
  j["n_layers"] = c.n_layers;
  j["d_model"] = c.d_model;
  j["d_ff"] = c.d_ff;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["n_vocab"] = c.n_vocab;
  j["n_ctx_train"] = c.n_ctx_train;
  j["rms_eps"] = c.rms_eps;
  j["rope"] = rope_json(model);
  j["block"] = {{"ffn_act", ffn_act_name(c.ffn_act)},
                {"qkv_bias", c.qkv_bias},
                {"qk_norm", c.qk_norm},
                {"post_norms", c.post_norms},
                {"embd_scale", c.embd_scale},
                {"attn_scale", c.attn_scale},
                {"final_logit_softcap", c.final_logit_softcap}};
  // Per layer: the sliding window, 0 for a global layer.
  j["layer_window"] = c.layer_window.empty() ? std::vector<int>(c.n_layers, 0) : c.layer_window;
  j["tied_output"] = c.tied_output;
  j["weight_bytes"] = model.weight_bytes();
  if (tok) {
    j["tokenizer"] = {{"model", f.get_string_or("tokenizer.ggml.model", "")},
                      {"pre", f.get_string_or("tokenizer.ggml.pre", "")},
                      {"n_tokens", tok->n_vocab()},
                      {"bos_id", tok->bos_id()},
                      {"eos_id", tok->eos_id()},
                      {"add_bos", tok->adds_bos()}};
  }
  j["n_tensors"] = f.tensors().size();
  j["ignored_tensors"] = model.ignored_tensors();
  return j;
}

nlohmann::ordered_json tensors_json(const GgufFile& f) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", std::string(dtype_name(t.type))},
                       {"shape", t.ne},
                       {"bytes", t.n_bytes}});
  }
  return tensors;
}

// The "rope", "rope scaling", "block" and (hybrid stacks) "attention" lines.
void print_rope_and_block(const Model& model) {
  const ModelConfig& c = model.config();
  const RopeScaling& rs = c.rope_scaling;
  const RopeTable& rope = model.rope_table(c.n_ctx_train);
  std::printf("rope          layout %s, base %g, %d dims (%d frequency chunks)\n",
              rope_layout_name(c.rope_layout), c.rope_base, c.rope_dim, c.rope_dim / 2);
  std::printf("rope scaling  %s", rope_scaling_name(rs.type));
  if (rs.type != RopeScalingType::None) {
    if (rs.freq_scale != 1.0f) std::printf(", factor %g", 1.0 / rs.freq_scale);
    std::printf(", original context %d", rs.n_ctx_orig);
  }
  if (!rope.factors.empty()) std::printf(", factor table %s", rope.factors.c_str());
  if (rope.mscale != 1.0f) std::printf(", magnitude %g", rope.mscale);
  std::printf("\n");
  std::printf("block         ffn %s%s%s%s, attention scale %g\n", ffn_act_name(c.ffn_act),
              c.qkv_bias ? ", qkv bias" : "", c.qk_norm ? ", qk-norm" : "",
              c.post_norms ? ", post-norms" : "", c.attn_scale);
  if (c.n_windowed_layers() > 0) {
    std::string global;
    for (int l = 0; l < c.n_layers; ++l) {
      if (!c.windowed(l)) global += (global.empty() ? "" : ",") + std::to_string(l);
    }
    int window = 0;
    for (int w : c.layer_window) window = std::max(window, w);
    std::printf(
        "attention     %d sliding-window layers (window %d, rope base %g), global layers %s\n",
        c.n_windowed_layers(), window, c.rope_base_local, global.c_str());
  }
}

// The text report: a summary, then the tensor table.
void print_inspect(const Model& model) {
  const ModelConfig& c = model.config();
  const GgufFile& f = model.file();
  const Tokenizer* tok = model.tokenizer();
  std::printf("file          %s (GGUF v%u, %s)\n", f.path().c_str(), f.version(),
              human_bytes(f.file_bytes()).c_str());
  std::printf("architecture  %s%s%s\n", c.arch.c_str(),
              c.name.empty() ? "" : "  name: ", c.name.c_str());
  std::printf("layers        %d   d_model %d   d_ff %d\n", c.n_layers, c.d_model, c.d_ff);
  std::printf("heads         %d query, %d kv (group %d), head_dim %d\n", c.n_heads, c.n_kv_heads,
              c.n_group(), c.head_dim);
  std::printf("family        %s\n", model_family(f, c).c_str());
  print_rope_and_block(model);
  std::printf("context       %d tokens (trained)%s\n", c.n_ctx_train,
              c.n_ctx_max() > c.n_ctx_train ? fmt::format(", {} with YaRN", c.n_ctx_max()).c_str()
                                            : "");
  std::printf("vocabulary    %d%s\n", c.n_vocab,
              c.tied_output ? "  (output tied to embedding)" : "");
  if (tok) {
    std::printf("tokenizer     %s / pre %s, bos %d, eos %d, add_bos %s\n",
                f.get_string_or("tokenizer.ggml.model", "").c_str(),
                f.get_string_or("tokenizer.ggml.pre", "").c_str(), tok->bos_id(), tok->eos_id(),
                tok->adds_bos() ? "yes" : "no");
  }
  std::printf("weights       %s in %zu tensors\n", human_bytes(model.weight_bytes()).c_str(),
              f.tensors().size());
  std::string ignored;
  for (const std::string& n : model.ignored_tensors()) ignored += (ignored.empty() ? "" : ", ") + n;
  std::printf("ignored       %s\n\n",
              ignored.empty() ? "none (every tensor is bound)" : ignored.c_str());
  std::printf("%-32s %-6s %-16s %12s\n", "tensor", "type", "shape", "bytes");
  for (const auto& t : f.tensors()) {
    std::printf("%-32s %-6s %-16s %12llu\n", t.name.c_str(),
                std::string(dtype_name(t.type)).c_str(), shape_str(t.ne).c_str(),
                static_cast<unsigned long long>(t.n_bytes));
  }
}

void run_inspect(const InspectArgs& a) {
  auto model = load_model(a.model);
  if (a.json) {
    nlohmann::ordered_json j = inspect_json(*model);
    j["tensors"] = tensors_json(model->file());
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_inspect(*model);
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "show a model's architecture and tensors");
  cmd->add_option("model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_inspect(*a); });
}

}  // namespace fasa::cli
