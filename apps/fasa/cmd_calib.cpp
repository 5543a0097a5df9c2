// `fasa calib list [--json]` — the stored calibrations.
// `fasa calib show CALIB.json [--n-tip X] [--json]` — the dominant FCs per layer and head (and,
// in files of version >= 3, Double Sparsity's heavy channels: 2 x n_tip key dims; in files of
// version >= 4, each head's compound set, its first n_tip FCs, and their CA in --json, and the
// default selector's sets, one per kv-head group, in both).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "fasa/attention/calibration.h"
#include "fasa/attention/calibration_store.h"
#include "fasa/calibrate/heatmap.h"
#include "fasa/core/error.h"
#include "fasa/io/svg.h"

namespace fasa::cli {

namespace {

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

void add_calib_commands(CLI::App& app) {
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
