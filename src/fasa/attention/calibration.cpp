#include "fasa/attention/calibration.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/core/input_file.h"
#include "fasa/io/atomic_file.h"
#include "fasa/io/gguf.h"
#include "fasa/io/json_read.h"

namespace fasa {

int Calibration::row(int layer) const {
  const auto it = std::lower_bound(layers.begin(), layers.end(), layer);
  return it != layers.end() && *it == layer ? static_cast<int>(it - layers.begin()) : -1;
}

int Calibration::covered_row(int layer) const {
  const int r = row(layer);
  FASA_CHECK(r >= 0);
  return r;
}

void Calibration::rank_all() {
  const int nf = n_fc();
  ranked.resize(mean_ca.size());
  for (size_t base = 0; base < mean_ca.size(); base += nf) {
    int32_t* r = ranked.data() + base;
    std::iota(r, r + nf, 0);
    std::stable_sort(r, r + nf,
                     [&](int32_t a, int32_t b) { return mean_ca[base + a] > mean_ca[base + b]; });
  }
}

std::vector<int> Calibration::heavy_channels(int layer, int head, int n) const {
  const float* imp = channels(layer, head);
  std::vector<int> dims(head_dim);
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) { return imp[a] > imp[b]; });
  dims.resize(std::clamp(n, 0, head_dim));
  return dims;
}

namespace {

// Version 4's "groups": per (covered layer, kv head) the group's compound set.
nlohmann::ordered_json groups_json(const Calibration& c) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (int l : c.layers) {
    for (int g = 0; g < c.n_kv_heads; ++g) {
      groups.push_back(
          {{"layer", l},
           {"kv_head", g},
           {"compound_fcs", std::vector<int32_t>(c.group_compound_fcs(l, g),
                                                 c.group_compound_fcs(l, g) + c.n_compound)},
           {"compound_ca", std::vector<float>(c.group_compound_cas(l, g),
                                              c.group_compound_cas(l, g) + c.n_compound)}});
    }
  }
  return groups;
}

}  // namespace

std::string calibration_json(const Calibration& c) {
  FASA_CHECK(!c.layers.empty() && std::is_sorted(c.layers.begin(), c.layers.end()) &&
             c.layers.front() >= 0 && c.layers.back() < c.n_layers &&
             c.mean_ca.size() == c.layers.size() * c.n_heads * c.n_fc() &&
             (!c.has_channel_importance() ||
              c.channel_importance.size() == c.layers.size() * c.n_heads * c.head_dim) &&
             (!c.has_compound() ||
              (c.has_channel_importance() &&
               c.compound.size() == c.layers.size() * c.n_heads * c.n_compound &&
               c.compound_ca.size() == c.compound.size() &&
               c.group_compound.size() == c.layers.size() * c.n_kv_heads * c.n_compound &&
               c.group_compound_ca.size() == c.group_compound.size())));
  nlohmann::ordered_json j;
  j["format"] = "fasa-calibration";
  j["version"] = c.has_compound() ? kCalibrationVersion : c.has_channel_importance() ? 3 : 2;
  j["model"] = {{"sha256", c.model_sha256}, {"name", c.model_name},
                {"arch", c.arch},           {"n_layers", c.n_layers},
                {"n_heads", c.n_heads},     {"n_kv_heads", c.n_kv_heads},
                {"head_dim", c.head_dim},   {"rope_layout", rope_layout_name(c.rope_layout)}};
  j["fc_layout"] = fc_layout_name(c.fc_layout);
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& f : c.fcs) dims.push_back({f.a, f.b});
  j["fc_dims"] = dims;
  if (!c.fc_freq.empty()) {
    j["fc_freq"] = c.fc_freq;
    j["rope_mscale"] = c.rope_mscale;
    j["rope_n_ctx"] = c.rope_n_ctx;
  }
  j["k"] = c.k;
  j["samples"] = c.n_samples;
  j["tokens_per_sample"] = c.tokens_per_sample;
  j["steps"] = c.steps;
  j["text"] = {{"name", c.text_name}, {"sha256", c.text_sha256}, {"n_tokens", c.text_tokens}};
  j["layers"] = c.layers;  // the layers covered: the model's global layers
  if (c.has_compound()) j["n_compound"] = c.n_compound;
  nlohmann::ordered_json heads = nlohmann::ordered_json::array();
  for (int l : c.layers) {
    for (int h = 0; h < c.n_heads; ++h) {
      std::vector<float> ca(c.ca(l, h), c.ca(l, h) + c.n_fc());
      std::vector<int32_t> rk(c.rank(l, h), c.rank(l, h) + c.n_fc());
      nlohmann::ordered_json e = {{"layer", l}, {"head", h}, {"mean_ca", ca}, {"ranked", rk}};
      if (c.has_channel_importance()) {
        e["channel_importance"] =
            std::vector<float>(c.channels(l, h), c.channels(l, h) + c.head_dim);
      }
      if (c.has_compound()) {
        e["compound_fcs"] =
            std::vector<int32_t>(c.compound_fcs(l, h), c.compound_fcs(l, h) + c.n_compound);
        e["compound_ca"] =
            std::vector<float>(c.compound_cas(l, h), c.compound_cas(l, h) + c.n_compound);
      }
      heads.push_back(e);
    }
  }
  j["heads"] = heads;
  if (c.has_compound()) j["groups"] = groups_json(c);
  // Names that are not UTF-8 (a text file's name, a model's general.name) are written with
  // U+FFFD in place of the bad bytes: they are informational, and the file stays valid JSON.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void save_calibration(const Calibration& c, const std::string& path) {
  write_file_atomic(path, calibration_json(c));
}

namespace {

constexpr int kMaxShape = 1 << 16;  // layers, heads, head_dim
constexpr int kMaxCount = 1 << 30;  // k, samples, tokens, steps
constexpr int64_t kMaxTokens = int64_t{1} << 53;

using Json = nlohmann::json;
using Root = JsonObject<Json>;

// "format" names a fasa calibration file; "version" is one this fasa reads.
int64_t read_version(const Root& root, const std::string& source) {
  if (!root.has("format") || root.at("format") != "fasa-calibration") {
    fail("'{}' is not a fasa calibration file (no \"format\": \"fasa-calibration\")", source);
  }
  const int64_t version = root.number<int64_t>("version", INT64_MIN, INT64_MAX);
  if (version < 1 || version > kCalibrationVersion) {
    fail("calibration file '{}' has version {}, this fasa reads versions 1 to {}", source, version,
         kCalibrationVersion);
  }
  return version;
}

// "model": the identity and attention shape of the model calibrated.
void read_model(const Root& root, const std::string& source, Calibration& c) {
  const auto m = root.object("model");
  c.model_sha256 = m.string("sha256");
  c.model_name = m.string("name");
  c.arch = m.string("arch");
  c.n_layers = m.number<int>("n_layers", 1, kMaxShape);
  c.n_heads = m.number<int>("n_heads", 1, kMaxShape);
  c.n_kv_heads = m.number<int>("n_kv_heads", 1, c.n_heads);
  c.head_dim = m.number<int>("head_dim", 2, kMaxShape);
  if (c.head_dim % 2 != 0 || c.n_heads % c.n_kv_heads != 0) {
    fail(
        "{}: implausible model shape (head_dim {} must be even, n_heads {} a multiple of "
        "n_kv_heads {})",
        source, c.head_dim, c.n_heads, c.n_kv_heads);
  }
  const std::string rope = m.string("rope_layout");
  if (rope != "norm" && rope != "neox") {
    fail("{}: field \"model.rope_layout\" must be \"norm\" or \"neox\" (got \"{}\")", source, rope);
  }
  c.rope_layout = rope == "norm" ? RopeLayout::Norm : RopeLayout::Neox;
}

// "fc_layout", "fc_dims" (head_dim / 2 pairs of key dims) and the optional "fc_freq" block.
void read_fcs(const Root& root, const std::string& source, Calibration& c) {
  try {
    c.fc_layout = parse_fc_layout(root.string("fc_layout"));
  } catch (const Error& e) {
    fail("{}: field \"fc_layout\": {}", source, e.what());
  }
  const Json& fc_dims_json = root.array("fc_dims", c.head_dim / 2);
  for (size_t i = 0; i < fc_dims_json.size(); ++i) {
    const std::string field = "fc_dims[" + std::to_string(i) + "]";
    const Json& d = fc_dims_json[i];
    if (!d.is_array() || d.size() != 2) {
      fail("{}: field \"{}\" must be a pair of key dims (got {})", source, field, json_shown(d));
    }
    c.fcs.push_back(FcDims{json_number<int>(d[0], source, field + "[0]", 0, c.head_dim - 1),
                           json_number<int>(d[1], source, field + "[1]", 0, c.head_dim - 1)});
  }
  if (root.has("fc_freq")) {
    c.fc_freq = root.numbers<float>("fc_freq", 0.0f, 1e3f, c.fcs.size());
    c.rope_mscale = root.number<float>("rope_mscale", 0.0f, 16.0f);
    c.rope_n_ctx = root.number<int>("rope_n_ctx", 0, kMaxCount);
  }
}

// The calibration run's settings and the text it read.
void read_run(const Root& root, Calibration& c) {
  c.k = root.number<int>("k", 0, kMaxCount);
  c.n_samples = root.number<int>("samples", 0, kMaxCount);
  c.tokens_per_sample = root.number<int>("tokens_per_sample", 0, kMaxCount);
  c.steps = root.number<int>("steps", 0, kMaxCount);
  const auto t = root.object("text");
  c.text_name = t.string("name");
  c.text_sha256 = t.string("sha256");
  c.text_tokens = t.number<int64_t>("n_tokens", 0, kMaxTokens);
}

// The file's fc_dims are exactly the pairs its rope and fc layouts make.
void check_fc_mapping(const Calibration& c, const std::string& source) {
  const auto want = fc_dims(c.rope_layout, c.fc_layout, c.head_dim, c.head_dim);
  bool same = want.size() == c.fcs.size();
  for (size_t i = 0; same && i < want.size(); ++i) {
    same = want[i].a == c.fcs[i].a && want[i].b == c.fcs[i].b;
  }
  if (!same) {
    fail("calibration '{}': fc_dims do not match the {} mapping for a {} model", source,
         fc_layout_name(c.fc_layout), rope_layout_name(c.rope_layout));
  }
}

// "layers": the covered layers, distinct and ascending (version 1: all of them).
void read_layers(const Root& root, int64_t version, const std::string& source, Calibration& c) {
  if (version == 1) {  // before hybrid models: every layer was calibrated
    c.layers.resize(c.n_layers);
    std::iota(c.layers.begin(), c.layers.end(), 0);
    return;
  }
  c.layers = root.numbers<int>("layers", 0, c.n_layers - 1);
  bool ok = !c.layers.empty();
  for (size_t i = 1; ok && i < c.layers.size(); ++i) ok = c.layers[i] > c.layers[i - 1];
  if (!ok) {
    fail(
        "calibration '{}': 'layers' must list distinct layers of the model's {} in "
        "ascending order",
        source, c.n_layers);
  }
}

// An entry's "compound_fcs" (n_compound distinct FC ids) and "compound_ca" (each in [0, 1]) into
// row `row` of fcs and ca ([rows, n_compound]).
template <class Entry>
void read_compound(const Entry& e, const std::string& source, size_t row, std::vector<int32_t>& fcs,
                   std::vector<float>& ca, const Calibration& c) {
  const int n = c.n_compound;
  const auto ids = e.template numbers<int32_t>("compound_fcs", 0, c.n_fc() - 1, n);
  std::vector<int32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    fail("{}: field \"{}\" must list distinct FCs", source, e.field("compound_fcs"));
  }
  const auto cas = e.template numbers<float>("compound_ca", 0.0f, 1.0f, n);
  std::copy(ids.begin(), ids.end(), fcs.begin() + row * n);
  std::copy(cas.begin(), cas.end(), ca.begin() + row * n);
}

// "heads": one entry per (covered layer, head), in any order, each exactly once; fills
// mean_ca [n_covered * n_heads, n_fc] and (version >= 3) channel_importance
// [n_covered * n_heads, head_dim].
void read_heads(const Root& root, int64_t version, const std::string& source, Calibration& c) {
  const size_t n_heads_total = c.layers.size() * c.n_heads;
  const Json& heads = root.array("heads");
  if (heads.size() != n_heads_total) {
    fail("calibration '{}': {} head entries, expected {}", source, heads.size(), n_heads_total);
  }
  c.mean_ca.assign(n_heads_total * c.n_fc(), 0.0f);
  if (version >= 3) c.channel_importance.assign(n_heads_total * c.head_dim, 0.0f);
  if (version >= 4) {
    c.n_compound = root.number<int>("n_compound", 1, c.n_fc());
    c.compound.assign(n_heads_total * c.n_compound, 0);
    c.compound_ca.assign(n_heads_total * c.n_compound, 0.0f);
    c.group_compound.assign(c.layers.size() * c.n_kv_heads * c.n_compound, 0);
    c.group_compound_ca.assign(c.layers.size() * c.n_kv_heads * c.n_compound, 0.0f);
  }
  std::vector<char> seen(n_heads_total, 0);  // [n_covered * n_heads]
  constexpr float kMaxFloat = std::numeric_limits<float>::max();
  for (size_t i = 0; i < heads.size(); ++i) {
    const auto e = root.element("heads", i);
    const int l = e.number<int>("layer", 0, c.n_layers - 1);
    const int h = e.number<int>("head", 0, c.n_heads - 1);
    const int r = c.row(l);
    if (r < 0 || seen[static_cast<size_t>(r) * c.n_heads + h]) {
      fail("calibration '{}': bad head entry (layer {}, head {}; covered layers {})", source, l, h,
           layer_list_text(c.layers));
    }
    const size_t row = static_cast<size_t>(r) * c.n_heads + h;
    seen[row] = 1;
    const auto ca = e.numbers<float>("mean_ca", 0.0f, kMaxFloat, c.n_fc());
    std::copy(ca.begin(), ca.end(), c.mean_ca.begin() + row * c.n_fc());
    if (version >= 3) {
      const auto imp = e.numbers<float>("channel_importance", 0.0f, kMaxFloat, c.head_dim);
      std::copy(imp.begin(), imp.end(), c.channel_importance.begin() + row * c.head_dim);
    }
    if (version >= 4) read_compound(e, source, row, c.compound, c.compound_ca, c);
  }
}

// Version 4: "n_compound" and, per (covered layer, kv head), the group's compound set.
void read_groups(const Root& root, int64_t version, const std::string& source, Calibration& c) {
  if (version < 4) return;
  const size_t n_groups = c.layers.size() * c.n_kv_heads;
  const Json& groups = root.array("groups", static_cast<int64_t>(n_groups));
  std::vector<char> seen(n_groups, 0);  // [n_covered * n_kv_heads]
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto e = root.element("groups", i);
    const int l = e.number<int>("layer", 0, c.n_layers - 1);
    const int g = e.number<int>("kv_head", 0, c.n_kv_heads - 1);
    const int r = c.row(l);
    if (r < 0 || seen[static_cast<size_t>(r) * c.n_kv_heads + g]) {
      fail("calibration '{}': bad group entry (layer {}, kv head {}; covered layers {})", source, l,
           g, layer_list_text(c.layers));
    }
    const size_t row = static_cast<size_t>(r) * c.n_kv_heads + g;
    seen[row] = 1;
    read_compound(e, source, row, c.group_compound, c.group_compound_ca, c);
  }
}

}  // namespace

Calibration parse_calibration(std::string_view text, const std::string& source) {
  const Json doc = json_parse<Json>(text, source);
  const Root root(doc, source);
  const int64_t version = read_version(root, source);
  Calibration c;
  read_model(root, source, c);
  read_fcs(root, source, c);
  read_run(root, c);
  check_fc_mapping(c, source);
  read_layers(root, version, source, c);
  read_heads(root, version, source, c);
  read_groups(root, version, source, c);
  c.rank_all();
  return c;
}

Calibration load_calibration(const std::string& path) {
  return parse_calibration(read_input_file(path, "calibration file"), path);
}

void check_calibration(const Calibration& c, const PolicyContext& ctx, const std::string& path) {
  const AttnShape& m = ctx.shape;
  if (c.arch != ctx.arch || c.n_layers != m.n_layers || c.n_heads != m.n_heads ||
      c.n_kv_heads != m.n_kv_heads || c.head_dim != m.head_dim) {
    fail(
        "calibration '{}' was made for a different model shape ({} {}x{} heads, head_dim {}), "
        "this model is {} {}x{} heads, head_dim {}",
        path, c.arch, c.n_layers, c.n_heads, c.head_dim, ctx.arch, m.n_layers, m.n_heads,
        m.head_dim);
  }
  if (c.rope_layout != ctx.rope_layout) {
    fail("calibration '{}' was made for RoPE layout {}, the model uses {}", path,
         rope_layout_name(c.rope_layout), rope_layout_name(ctx.rope_layout));
  }
  const std::vector<int> global = m.global_layers();
  if (c.layers != global) {
    const bool hybrid = static_cast<int>(global.size()) < m.n_layers;
    fail(
        "calibration '{}' covers layers {}, but this model's {} {} (FASA calibrates the "
        "global-attention layers only{}); recalibrate with `fasa calibrate`",
        path, layer_list_text(c.layers), hybrid ? "global-attention layers are" : "layers are",
        layer_list_text(global), hybrid ? ", sliding-window layers attend over their window" : "");
  }
  FASA_CHECK(ctx.model_sha256 != nullptr);
  const std::string id = ctx.model_sha256();
  if (id != c.model_sha256) {
    fail("calibration '{}' was made for another model file (sha256 {}…, this model {}…)", path,
         c.model_sha256.substr(0, 12), id.substr(0, 12));
  }
}

}  // namespace fasa
