// `fasa synth --shape NAME -o FILE [--seed N]` / `fasa synth --list`: writes a paper-shaped
// random-weight GGUF (synth/shaped_model.h): the shapes, metadata and Q4_K_M type mix of a public
// file, random weights. For speed and memory measurements only, never accuracy.
#include <algorithm>
#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/synth/shaped_model.h"

namespace fasa::cli {

namespace {

struct SynthArgs {
  std::string shape;
  std::string out;
  uint64_t seed = 1;
  bool list = false;
};

void list_shapes() {
  for (const std::string& name : synth::shape_names()) {
    const synth::ShapeSpec s = synth::shape_spec(name);
    std::printf("%s\t%s, %d layers, d_model %d, %d/%d heads, d_ff %d, vocab %d, %s data\n",
                name.c_str(), s.arch.c_str(), s.n_layers, s.d_model, s.n_heads, s.n_kv_heads,
                s.d_ff, s.n_vocab, human_bytes(synth::shaped_data_bytes(s)).c_str());
  }
}

void run_synth(const SynthArgs& a) {
  if (a.list) {
    list_shapes();
    return;
  }
  if (a.shape.empty()) fail("give --shape NAME (see `fasa synth --list`)");
  if (a.out.empty()) fail("give -o FILE, the GGUF file to write");
  const synth::ShapeSpec spec = synth::shape_spec(a.shape);
  std::fprintf(stderr, "fasa: writing %s (random weights, %s) to %s\n", spec.name.c_str(),
               human_bytes(synth::shaped_data_bytes(spec)).c_str(), a.out.c_str());
  int last_pct = -1;
  synth::write_shaped_model(spec, a.out, a.seed, [&](uint64_t done, uint64_t total) {
    const int pct = static_cast<int>(100 * done / std::max<uint64_t>(total, 1));
    if (pct / 5 == last_pct / 5) return;
    last_pct = pct;
    std::fprintf(stderr, "fasa: synth: %3d%% (%s of %s)\n", pct, human_bytes(done).c_str(),
                 human_bytes(total).c_str());
  });
  std::fprintf(stderr, "fasa: wrote %s\n", a.out.c_str());
}

}  // namespace

void add_synth_command(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  auto* cmd =
      app.add_subcommand("synth",
                         "write a random-weight GGUF with a public model's shapes and Q4_K_M types "
                         "(speed and memory only, never accuracy)");
  cmd->add_option("--shape", a->shape, "shape name (see --list)");
  cmd->add_option("-o,--output", a->out, "GGUF file to write (atomically)");
  cmd->add_option("--seed", a->seed, "random seed")->capture_default_str();
  cmd->add_flag("--list", a->list, "list the shapes");
  cmd->callback([a] { run_synth(*a); });
}

}  // namespace fasa::cli
