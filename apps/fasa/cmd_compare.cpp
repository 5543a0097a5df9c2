// Comparisons of finished sweeps (eval/protocol_compare.h, eval/paired.h):
//   fasa eval protocols DIR_OR_RESULTS_JSON DIR_OR_RESULTS_JSON [--json]
//   fasa eval paired DIR_OR_RESULTS_JSON LABEL_A LABEL_B [--json]
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "fasa/eval/paired.h"
#include "fasa/eval/protocol_compare.h"
#include "fasa/eval/sweep_scores.h"
#include "fasa/io/json_read.h"

namespace fasa::cli {

namespace {

struct ProtocolsArgs {
  std::vector<std::string> sweeps;  // [2] directories or results.json files
  bool json = false;
};

// A sweep's results.json, from its directory or the file itself.
ProtocolSweep read_sweep_results(const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) p /= "results.json";
  return {json_parse<nlohmann::json>(read_text_file(p.string()), p.string()), p.string()};
}

void run_protocols(const ProtocolsArgs& a) {
  const ProtocolComparison c =
      compare_protocols(read_sweep_results(a.sweeps[0]), read_sweep_results(a.sweeps[1]));
  std::printf("%s", a.json ? protocol_json(c).c_str() : protocol_markdown(c).c_str());
}

struct PairedArgs {
  std::string sweep, a, b;
  bool json = false;
};

void run_paired(const PairedArgs& a) {
  const ProtocolSweep r = read_sweep_results(a.sweep);
  const SweepScores s = read_sweep_scores(r.doc, r.source);
  const std::vector<PairedRow> rows = paired_rows(s, a.a, a.b);
  std::printf("%s", a.json ? paired_json(s, a.a, a.b, rows).c_str()
                           : paired_markdown(s, a.a, a.b, rows).c_str());
}

}  // namespace

void add_compare_commands(CLI::App* eval) {
  auto pr = std::make_shared<ProtocolsArgs>();
  auto* pc = eval->add_subcommand("protocols",
                                  "two sweeps of one task file side by side: dense prefill "
                                  "against the question under the policy, paired per setting");
  pc->add_option("sweeps", pr->sweeps,
                 "the two sweeps' output directories (or results.json files), in either order")
      ->required()
      ->expected(2);
  pc->add_flag("--json", pr->json, "print one JSON object");
  pc->callback([pr] { run_protocols(*pr); });

  auto pa = std::make_shared<PairedArgs>();
  auto* pac = eval->add_subcommand("paired",
                                   "two settings of one sweep on the same tasks, budget by budget: "
                                   "paired difference, "
                                   "95 % interval, wins, sign test, bytes read");
  pac->add_option("sweep", pa->sweep, "the sweep's output directory (or its results.json)")
      ->required();
  pac->add_option("a", pa->a, "setting A's label, as results.md names rows (e.g. fasa)")
      ->required();
  pac->add_option("b", pa->b, "setting B's label (e.g. double-sparsity, full)")->required();
  pac->add_flag("--json", pa->json, "print one JSON object");
  pac->callback([pa] { run_paired(*pa); });
}

}  // namespace fasa::cli
