#include "cli_common.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "fasa/attention/calibration_store.h"
#include "fasa/attention/registry.h"
#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/session.h"
#include "fasa/eval/task_json.h"
#include "fasa/hub/resolve.h"
#include "progress_line.h"

namespace fasa::cli {

std::string resolve_model_path(const std::string& model) { return hub::resolve_model_path(model); }

std::shared_ptr<const Model> load_model(const std::string& model, bool verify) {
  return Model::load(hub::resolve_model_path(model, verify));
}

std::string read_text_file(const std::string& path) { return read_input_file(path, "text file"); }

std::string read_text_or_stdin(const std::string& path) {
  if (path != "-") return read_text_file(path);
  std::string text;
  char buf[65536];
  for (;;) {
    const size_t n = std::fread(buf, 1, sizeof buf, stdin);
    text.append(buf, n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(stdin)) fail("-f -: cannot read standard input: {}", std::strerror(errno));
  if (text.empty()) {
    fail("-f -: standard input is empty (pipe the text in, e.g. `echo TEXT | fasa ... -f -`)");
  }
  return text;
}

void apply_threads(int n_threads) {
  if (n_threads < 0) fail("--threads must be >= 0 (got {})", n_threads);
  set_num_threads(n_threads);
}

std::string kv_by_layer_type(const KvCache& cache) {
  const AttnShape& sh = cache.shape();
  int n_win = 0, window = 0, ring = 0;
  for (int l = 0; l < sh.n_layers; ++l) {
    if (sh.window(l) > 0) {
      ++n_win;
      window = std::max(window, sh.window(l));
      ring = std::max(ring, cache.layer_capacity(l));
    }
  }
  if (n_win == 0) return {};
  return fmt::format("{} global layers {}, {} sliding-window layers (window {}, {}-row rings) {}",
                     sh.n_layers - n_win, human_bytes(cache.used_bytes_of(false)), n_win, window,
                     ring, human_bytes(cache.used_bytes_of(true)));
}

std::string resolved_spec(const std::string& spec, const std::shared_ptr<const Model>& model,
                          bool quiet) {
  const std::string out = with_stored_calibration(spec, policy_context(model));
  const std::string calib = spec_calibration(out);
  static std::set<std::string> told;  // one line per calibration file
  if (calib.empty() || quiet) return out;
  if (calib == "online") {
    std::string name;
    PolicyOptions opts;
    parse_policy_spec(out, &name, &opts);
    const auto w = opts.find("calib_window");
    const auto sp = opts.find("calib_spread");
    const bool asked = spec_calibration(spec) == "online";  // not auto finding none stored
    const std::string line =
        fmt::format("fasa: calibration: online (window {}{}{})", w == opts.end() ? "32" : w->second,
                    sp == opts.end() || sp->second == "0" ? ""
                                                          : fmt::format(", spread {}", sp->second),
                    asked ? "" : "; none stored for this model file");
    if (told.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
    return out;
  }
  // A file that is missing or not a regular file gets no line: the policy's own error follows.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(calib, ec)) return out;
  if (told.insert(calib).second) {
    std::fprintf(stderr, "fasa: calibration: %s %s\n",
                 is_stored_calibration(calib) ? "stored" : "file", calib.c_str());
  }
  return out;
}

std::string online_calibration_text(const OnlineCalibrationInfo& oc, double prefill_ms) {
  if (!oc.done) {
    return fmt::format("calibration: online, not made yet (it is made at the first decode step{})",
                       oc.queries == 0 && oc.window_bytes == 0 ? "" : " with a full window");
  }
  if (oc.reused) {
    return "calibration: online, reused with the copied prefix (made once for that prompt)";
  }
  const std::string share =
      prefill_ms > 0.0 && !oc.from_decode
          ? fmt::format(", {:.1f}% of the prefill's time", 100.0 * oc.seconds * 1000.0 / prefill_ms)
          : std::string();
  const int spread = oc.from_decode ? 0 : std::max(0, oc.queries - oc.window);
  const std::string where =
      oc.from_decode
          ? fmt::format("{} first decode steps (attended densely; no prefill was seen)", oc.queries)
      : spread > 0 ? fmt::format(
                         "{} last prompt positions and {} earlier ones spread over the "
                         "prompt",
                         oc.queries - spread, spread)
                   : fmt::format("{} last prompt positions", oc.queries);
  const std::string refreshed =
      oc.refreshes > 0 ? fmt::format("; made again {} times from the newest queries, in {:.3f} s",
                                     oc.refreshes, oc.refresh_seconds)
                       : std::string();
  return fmt::format(
      "calibration: online from the queries of the {} per layer, made in {:.3f} s{}; they took {} "
      "until then{}",
      where, oc.seconds, share, human_bytes(oc.window_bytes), refreshed);
}

std::vector<std::string> resolved_specs(const std::vector<std::string>& specs,
                                        const std::shared_ptr<const Model>& model, bool quiet) {
  std::vector<std::string> out;
  for (const std::string& s : specs) out.push_back(resolved_spec(s, model, quiet));
  return out;
}

std::string PolicyArgs::spec() const {
  std::string s = policy;
  std::string dense = dense_layers;
  for (char& c : dense) c = c == ',' ? '+' : c;
  const std::pair<const char*, const std::string*> flags[] =
      {{"calib", &calib},   {"budget", &budget},      {"n_tip", &n_tip},
       {"gqa", &gqa},       {"dense_layers", &dense}, {"sink", &sink},
       {"recent", &recent}, {"variant", &variant},    {"offload_dir", &offload_dir}};
  bool first = s.find(':') == std::string::npos;
  for (const auto& [key, value] : flags) {
    if (value->empty()) continue;
    s += (first ? ":" : ",") + std::string(key) + "=" + *value;
    first = false;
  }
  return s;
}

std::vector<std::string> PolicyArgs::specs() const {
  std::vector<std::string> v{spec()};
  v.insert(v.end(), compare.begin(), compare.end());
  return v;
}

void add_policy_options(CLI::App* cmd, PolicyArgs& p, bool with_compare) {
  if (with_compare) {
    cmd->add_option("--compare", p.compare,
                    "another policy spec (name:key=value,...) to run side by side (repeatable)")
        ->allow_extra_args(false);
  }
  cmd->add_option("--policy", p.policy,
                  "attention policy, NAME or NAME:key=value,... (`fasa help policies` lists "
                  "them and their options)")
      ->capture_default_str();
  cmd->footer("Attention policies and their options: fasa help policies");
  cmd->add_option("--calib", p.calib, "fasa: calibration file from `fasa calibrate`");
  cmd->add_option("--budget", p.budget,
                  "tokens attended per decode step per kv-head group (< 1: fraction of context)");
  cmd->add_option("--n-tip", p.n_tip, "fasa: dominant FCs per head (count or fraction; 0.25)");
  cmd->add_option("--gqa", p.gqa, "shared (one selection per kv head) or per-head");
  cmd->add_option("--dense-layers", p.dense_layers, "fasa: layers kept dense (list, or none; 0)");
  cmd->add_option("--sink", p.sink, "fasa: first tokens always kept (inside the budget)");
  cmd->add_option("--recent", p.recent, "fasa: last tokens always kept (inside the budget)");
  cmd->add_option("--variant", p.variant, "fasa: c (compute) or m (memory)");
  cmd->add_option("--offload-dir", p.offload_dir, "fasa variant m: directory of the slow tier");
}

void add_lossless_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--lossless", value,
                  "lossless decoding: the policy drafts K tokens (1-14), full attention verifies "
                  "them in one batched step; output = full attention's; auto = K adapts")
      ->capture_default_str();
}

std::string lossless_summary(const std::string& setting, const LosslessStats& st) {
  return fmt::format(
      "lossless {}: {} verifications, acceptance {:.1f}% ({} of {} drafts), {:.2f} tokens per "
      "verification, KV read per token {} (drafts {}, verifications {}); {:.1f} ms per draft, "
      "{:.1f} ms per verification",
      setting, st.verifications, 100.0 * st.acceptance(), st.accepted, st.drafted,
      st.tokens_per_verification(), human_bytes(static_cast<uint64_t>(st.kv_bytes_per_token())),
      human_bytes(st.tokens ? st.draft_kv_bytes / st.tokens : 0),
      human_bytes(st.tokens ? st.verify_kv_bytes / st.tokens : 0),
      st.drafted ? st.draft_ms / st.drafted : 0.0,
      st.verifications ? st.verify_ms / st.verifications : 0.0);
}

void add_task_run_options(CLI::App* cmd, TaskRunArgs& r) {
  cmd->add_option("-c,--ctx,--ctx-size", r.n_ctx,
                  "context size (0 = the longest prompt + its new tokens)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", r.threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("-j,--jobs", r.jobs,
                  "tasks run in parallel, one thread each (faster on few cores; same results)")
      ->capture_default_str();
  cmd->add_option("--kv-type", r.kv_type, "KV cache type: f16, f32 or q8_0")->capture_default_str();
  cmd->add_flag("--chat", r.chat, "wrap each prompt as a user turn of the model's chat format");
  cmd->add_flag("--question-under-policy", r.question_under_policy,
                "prefill each task's context densely, then run its question under the policy "
                "(decode steps) before the answer; default: the whole prompt is prefilled densely");
}

std::function<void(int, int)> progress_printer(const char* what) {
  auto line = std::make_shared<ProgressLine>(what);
  return [line](int done, int total) { line->update(done, total); };
}

}  // namespace fasa::cli
