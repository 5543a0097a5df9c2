// `fasa calibrate -m MODEL --text FILE [-o CALIB.json] [--tokens N] [--samples S] [--steps D]
//  [--k K] [--compound X] [--fc-layout rope|adjacent] [--threads T]` — FASA's offline
//  calibration; without -o it is stored for the model file (attention/calibration_store.h).
// `fasa calib list` and `fasa calib show`: cmd_calib.cpp.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/io/atomic_file.h"
#include "fasa/tokenizer/tokenizer.h"
#include "progress_line.h"

namespace fasa::cli {

namespace {

struct CalibrateArgs {
  std::string model;
  std::string text;
  std::string out;
  std::string fc_layout = "rope";
  int threads = 0;
  CalibrateOptions opts;
};

// Without -o: the model's store entry (calibration_store.h), its folder made now.
std::string output_path(const CalibrateArgs& a, const Model& model) {
  if (!a.out.empty()) return a.out;
  const std::filesystem::path p = stored_calibration_path(model_identity(model), a.text);
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec)
    fail("cannot create the calibration store {}: {}", p.parent_path().string(), ec.message());
  return p.string();
}

void run_calibrate(const CalibrateArgs& a) {
  apply_threads(a.threads);
  CalibrateArgs args = a;
  args.opts.fc_layout = parse_fc_layout(a.fc_layout);
  // Inputs and output are checked before any work: the output's temporary file is created
  // before the calibration starts (a missing or read-only directory fails there), and replaces
  // the output only once all is written.
  std::unique_ptr<AtomicFile> out;
  if (!a.out.empty()) out = std::make_unique<AtomicFile>(a.out);
  const std::string text = read_text_file(a.text);
  if (const int64_t bad = find_invalid_utf8(text); bad >= 0) {
    fail("calibration text '{}' is not valid UTF-8 (byte offset {})", a.text, bad);
  }
  auto model = load_model(a.model);
  const std::string path = output_path(a, *model);
  if (!out) out = std::make_unique<AtomicFile>(path);
  const auto tokens = model->require_tokenizer().encode(text, true, false);
  std::fprintf(stderr,
               "fasa: calibrating on %s (%zu tokens): %d samples x (%d prefill + %d "
               "decode steps), K = %d, FC layout %s\n",
               a.text.c_str(), tokens.size(), args.opts.samples, args.opts.tokens, args.opts.steps,
               args.opts.k, a.fc_layout.c_str());
  // Each phase's progress (progress_line.h): units done, rate, time in the phase, the time left
  // at the phase's pace so far.
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine line("samples");
  std::string phase = "sample";
  Calibration c = calibrate(model, tokens, args.opts, [&](const CalibrateProgress& p) {
    if (p.phase != phase) {
      phase = p.phase;
      line.restart(phase == "compound set" ? "compound sets" : phase);
    }
    line.update(p.done, p.total, p.share > 0.0 ? p.share : -1.0);
  });
  const std::string name = a.text.substr(a.text.find_last_of('/') + 1);
  c.text_name = name;
  c.text_sha256 = sha256_hex(text);
  out->write(calibration_json(c));
  out->commit();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "fasa: calibration %s in %s%s\n", path.c_str(), duration_text(s).c_str(),
               a.out.empty() ? " (stored: calib=auto and policies without calib= use it)" : "");
  std::printf("%s\n", path.c_str());
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd =
      app.add_subcommand("calibrate", "FASA calibration: rank each head's frequency chunks");
  cmd->add_option("-m,--model", a->model, "GGUF path or pulled model name")->required();
  cmd->add_option("--text", a->text, "calibration text (UTF-8)")->required();
  cmd->add_option("-o,--output", a->out,
                  "calibration JSON to write (default: stored for this model file under "
                  "$FASA_HOME/calibrations, where calib=auto finds it)");
  cmd->add_option("--tokens", a->opts.tokens, "dense prefill per sample")->capture_default_str();
  cmd->add_option("--samples", a->opts.samples, "samples (windows of the text)")
      ->capture_default_str();
  cmd->add_option("--steps", a->opts.steps, "decode-step queries per sample")
      ->capture_default_str();
  cmd->add_option("--k", a->opts.k, "calibration window K (top-K compared)")->capture_default_str();
  cmd->add_option("--compound", a->opts.compound,
                  "FCs per compound CA set (count, or fraction < 1 of the FCs; 0: none)")
      ->capture_default_str();
  cmd->add_option("--fc-layout", a->fc_layout, "rope (true RoPE planes) or adjacent (authors')")
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->callback([a] { run_calibrate(*a); });

  add_calib_commands(app);
}

}  // namespace fasa::cli
