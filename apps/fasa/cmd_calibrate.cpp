// `fasa calibrate -m MODEL --text FILE [-o CALIB.json] [--tokens N] [--samples S] [--steps D]
//  [--k K] [--compound X] [--fc-layout rope|adjacent] [--threads T]` — FASA's offline
//  calibration; without -o it is stored for the model file (attention/calibration_store.h).
// `fasa calib list [--json]` — the stored calibrations.
// `fasa calib show CALIB.json [--n-tip X] [--json]` — the dominant FCs per layer and head (and,
// in files of version >= 3, Double Sparsity's heavy channels: 2 x n_tip key dims; in files of
// version >= 4, each head's compound set, its first n_tip FCs, and their CA in --json, and the
// default selector's sets, one per kv-head group, in both).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/calibrate/heatmap.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/svg.h"
#include "fasa/tokenizer/tokenizer.h"

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

// "12 s" / "3 min 05 s": an ETA a person reads.
std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  return fmt::format("{} min {:02d} s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
}

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
  // One line per phase, rewritten as it goes: units done, time in the phase, the time left at
  // the phase's pace so far.
  const auto t0 = std::chrono::steady_clock::now();
  auto phase_start = t0;
  Calibration c = calibrate(model, tokens, args.opts, [&](const CalibrateProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - phase_start).count();
    const double share = p.share > 0.0 ? p.share : static_cast<double>(p.done) / p.total;
    std::fprintf(stderr, "\rfasa: %s %d/%d, %s, about %s left   ", p.phase, p.done, p.total,
                 duration_text(s).c_str(), duration_text(s / share * (1.0 - share)).c_str());
    if (p.done == p.total) {
      std::fprintf(stderr, "\n");
      phase_start = now;
    }
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

struct ListArgs {
  bool json = false;
};

// `fasa calib list`: the stored calibrations, one line each (or a JSON array).
void run_list(const ListArgs& a) {
  const std::vector<StoredCalibration> all = list_stored_calibrations();
  if (a.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const StoredCalibration& s : all) {
      nlohmann::ordered_json e = {{"path", s.path},
                                  {"model_sha256", s.model_sha256},
                                  {"model", s.model_name},
                                  {"text", s.text_name},
                                  {"text_sha256", s.text_sha256},
                                  {"version", s.version},
                                  {"k", s.k},
                                  {"samples", s.samples},
                                  {"tokens", s.tokens},
                                  {"steps", s.steps},
                                  {"n_compound", s.n_compound},
                                  {"mtime", s.mtime_s}};
      if (!s.error.empty()) e["error"] = s.error;
      out.push_back(e);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("%-14s %-28s %-28s %-16s %-3s %s\n", "MODEL SHA256", "MODEL", "TEXT", "DATE", "V",
              "PATH");
  for (const StoredCalibration& s : all) {
    char date[32] = "?";
    const std::time_t t = static_cast<std::time_t>(s.mtime_s);
    std::tm tm{};
    if (gmtime_r(&t, &tm)) std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", &tm);
    std::printf("%-14s %-28s %-28s %-16s %-3d %s%s\n", s.model_sha256.substr(0, 12).c_str(),
                s.model_name.substr(0, 28).c_str(), s.text_name.substr(0, 28).c_str(), date,
                s.version, s.path.c_str(), s.error.empty() ? "" : ("  (" + s.error + ")").c_str());
  }
  std::printf("store: %s\n", calibration_store_dir().c_str());
}

struct ShowArgs {
  std::string path;
  std::string image;
  double n_tip = 0.25;
  bool json = false;
};

// --image: an SVG heatmap (titles and labels are text; rsvg-convert makes a PNG of it).
void write_heatmap(const Calibration& c, const std::string& image) {
  const std::string_view ext = ".svg";
  if (image.size() < ext.size() || image.compare(image.size() - ext.size(), ext.size(), ext) != 0) {
    fail(
        "--image writes SVG: give a file name ending in .svg (got '{}'); for a PNG, convert "
        "the SVG: rsvg-convert -o FILE.png FILE.svg",
        image);
  }
  write_svg_file(image, calibration_heatmap_svg(c));
  std::fprintf(stderr, "fasa: heatmap written to %s\n", image.c_str());
}

// The file's summary and each covered head's n_tip dominant FCs, as one JSON line.
void print_show_json(const Calibration& c, int n_tip) {
  nlohmann::ordered_json j;
  j["model"] = c.model_name;
  j["fc_layout"] = fc_layout_name(c.fc_layout);
  j["k"] = c.k;
  j["n_tip"] = n_tip;
  if (!c.fc_freq.empty()) {
    j["fc_freq"] = c.fc_freq;
    j["rope_mscale"] = c.rope_mscale;
    j["rope_n_ctx"] = c.rope_n_ctx;
  }
  j["covered_layers"] = c.layers;
  // Arrays indexed by layer: `of(l)` for a covered layer, null for one the file does not cover
  // (a sliding-window layer).
  auto by_layer = [&c](const auto& of) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (int l = 0; l < c.n_layers; ++l) out.push_back(c.covers(l) ? of(l) : nullptr);
    return out;
  };
  j["layers"] = by_layer([&](int l) {
    nlohmann::ordered_json heads = nlohmann::ordered_json::array();
    for (int h = 0; h < c.n_heads; ++h) {
      std::vector<int32_t> dom(c.rank(l, h), c.rank(l, h) + n_tip);
      nlohmann::ordered_json e = {{"dominant", dom}, {"top_ca", c.ca(l, h)[dom[0]]}};
      if (c.has_channel_importance()) e["heavy_channels"] = c.heavy_channels(l, h, 2 * n_tip);
      if (c.has_compound()) {  // the first n_tip of the greedy set (at most the file's)
        const int n = std::min(n_tip, c.n_compound);
        e["compound"] = std::vector<int32_t>(c.compound_fcs(l, h), c.compound_fcs(l, h) + n);
        e["compound_ca"] = c.compound_cas(l, h)[n - 1];
      }
      heads.push_back(e);
    }
    return heads;
  });
  if (c.has_compound()) {  // the default selector's sets (fc_sets=group): one per kv-head group
    const int n = std::min(n_tip, c.n_compound);
    j["kv_groups"] = by_layer([&](int l) {
      nlohmann::ordered_json kv = nlohmann::ordered_json::array();
      for (int g = 0; g < c.n_kv_heads; ++g) {
        const int32_t* fcs = c.group_compound_fcs(l, g);
        kv.push_back({{"compound", std::vector<int32_t>(fcs, fcs + n)},
                      {"compound_ca", c.group_compound_cas(l, g)[n - 1]}});
      }
      return kv;
    });
  }
  std::printf("%s\n", j.dump().c_str());
}

// The sets the default selector scores with (fcs=compound, fc_sets=group): one per kv-head
// group, its first n_tip FCs in greedy order (at most the file's n_compound) and their CA.
void print_group_sets_text(const Calibration& c, int n_tip) {
  const int n = std::min(n_tip, c.n_compound);
  std::printf(
      "\nthe default selector's FC sets (fcs=compound, fc_sets=group), one per kv-head group: "
      "the first %d of %d in greedy order, then their compound CA%s\n\n",
      n, c.n_compound, n < n_tip ? "; the policy takes the other FCs by mean CA" : "");
  for (int l : c.layers) {
    for (int g = 0; g < c.n_kv_heads; ++g) {
      std::printf("layer %2d group %2d", l, g);
      for (int i = 0; i < n; ++i) std::printf(" %2d", c.group_compound_fcs(l, g)[i]);
      std::printf("  CA %.2f\n", c.group_compound_cas(l, g)[n - 1]);
    }
  }
}

// The same as text: a header, then one line per covered head (and per kv-head group).
void print_show_text(const Calibration& c, const std::string& path, int n_tip) {
  std::printf("calibration  %s (%s, FC layout %s, %d FCs per head)\n", path.c_str(),
              c.model_name.c_str(), fc_layout_name(c.fc_layout), c.n_fc());
  std::printf("made with    K = %d, %d samples x (%d tokens + %d steps) of %s\n", c.k, c.n_samples,
              c.tokens_per_sample, c.steps, c.text_name.c_str());
  if (static_cast<int>(c.layers.size()) < c.n_layers) {
    std::printf(
        "layers       %s of %d (the global layers; sliding-window layers are not "
        "calibrated)\n",
        layer_list_text(c.layers).c_str(), c.n_layers);
  }
  if (!c.fc_freq.empty()) {  // the frequency each FC really rotates at (scaling applied)
    std::printf("FC freqs     rad/token at context %d%s:", c.rope_n_ctx,
                c.rope_mscale != 1.0f ? fmt::format(", magnitude {:g}", c.rope_mscale).c_str()
                                      : "");
    for (int i = 0; i < c.n_fc(); ++i) std::printf(" %d:%.3g", i, c.fc_freq[i]);
    std::printf("\n");
  } else {
    std::printf("FC freqs     not recorded (file made before they were, or FC layout adjacent)\n");
  }
  std::printf(
      "showing      the %d dominant FCs per head (FC id:mean CA), FC 0 = highest "
      "frequency\n",
      n_tip);
  if (c.has_channel_importance()) {
    std::printf(
        "             then after '|' Double Sparsity's %d heavy channels (key dims, "
        "heaviest first)\n",
        2 * n_tip);
  }
  std::printf("\n");
  for (int l : c.layers) {
    for (int h = 0; h < c.n_heads; ++h) {
      std::printf("layer %2d head %2d ", l, h);
      for (int i = 0; i < n_tip; ++i) {
        const int fc = c.rank(l, h)[i];
        std::printf(" %2d:%.2f", fc, c.ca(l, h)[fc]);
      }
      if (c.has_channel_importance()) {
        std::printf("  |");
        for (int d : c.heavy_channels(l, h, 2 * n_tip)) std::printf(" %d", d);
      }
      std::printf("\n");
    }
  }
  if (c.has_compound()) print_group_sets_text(c, n_tip);
}

void run_show(const ShowArgs& a) {
  const Calibration c = load_calibration(a.path);
  if (!(a.n_tip > 0.0)) fail("--n-tip must be positive (got {})", a.n_tip);
  if (!a.image.empty()) write_heatmap(c, a.image);
  const int n_tip = std::clamp(a.n_tip < 1.0 ? static_cast<int>(std::lround(a.n_tip * c.n_fc()))
                                             : static_cast<int>(a.n_tip),
                               1, c.n_fc());
  if (a.json) {
    print_show_json(c, n_tip);
  } else {
    print_show_text(c, a.path, n_tip);
  }
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

  auto* calib = app.add_subcommand("calib", "inspect calibration files, list the stored ones");
  calib->require_subcommand(1);
  auto s = std::make_shared<ShowArgs>();
  auto* show = calib->add_subcommand("show", "dominant FCs per layer and head");
  show->add_option("file", s->path, "calibration JSON")->required();
  show->add_option("--n-tip", s->n_tip, "dominant FCs to show (count, or fraction < 1)")
      ->capture_default_str();
  show->add_flag("--json", s->json, "print one JSON object");
  show->add_option("--image", s->image,
                   "also write a layer x FC heatmap of mean CA as SVG (FILE.svg)");
  show->callback([s] { run_show(*s); });
  auto l = std::make_shared<ListArgs>();
  auto* list = calib->add_subcommand("list", "the stored calibrations (model, text, date)");
  list->add_flag("--json", l->json, "print a JSON array");
  list->callback([l] { run_list(*l); });
}

}  // namespace fasa::cli
