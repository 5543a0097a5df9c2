// The machine-readable row formats of the bench report.
#include "fasa/eval/bench_report.h"

#include <algorithm>

#include "fasa/core/error.h"

namespace fasa {
namespace {

using nlohmann::ordered_json;

// {"a": {"b": 1}, "c": [1, 2]} -> {"a.b": 1, "c": "1;2"}
void flatten(const ordered_json& j, const std::string& prefix, ordered_json& out) {
  for (const auto& [k, v] : j.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      flatten(v, key, out);
    } else if (v.is_array()) {
      std::string joined;
      for (const auto& e : v) {
        if (!joined.empty()) joined += ';';
        joined += e.is_string() ? e.get<std::string>() : e.dump();
      }
      out[key] = joined;
    } else {
      out[key] = v;
    }
  }
}

std::string cell(const ordered_json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  return v.dump();
}

}  // namespace

RowFormat parse_row_format(const std::string& name) {
  if (name == "md") return RowFormat::Markdown;
  if (name == "jsonl") return RowFormat::JsonLines;
  if (name == "json") return RowFormat::Json;
  if (name == "csv") return RowFormat::Csv;
  fail("-o/--output takes md, jsonl, json or csv (got '{}')", name);
}

void RowWriter::add(const ordered_json& row) {
  switch (format_) {
    case RowFormat::Markdown: fail("RowWriter: markdown rows are written by the command");
    case RowFormat::JsonLines: std::fprintf(out_, "%s\n", row.dump().c_str()); break;
    case RowFormat::Json:
      std::fprintf(out_, "%s  %s", n_rows_ == 0 ? "[\n" : ",\n", row.dump().c_str());
      break;
    case RowFormat::Csv: {
      ordered_json flat = ordered_json::object();
      flatten(row, "", flat);
      for (const auto& [k, v] : flat.items()) {
        if (std::find(columns_.begin(), columns_.end(), k) == columns_.end()) columns_.push_back(k);
      }
      flat_rows_.push_back(std::move(flat));
      break;
    }
  }
  ++n_rows_;
  std::fflush(out_);
}

void RowWriter::finish() {
  if (format_ == RowFormat::Json) std::fprintf(out_, "%s\n]\n", n_rows_ == 0 ? "[" : "");
  if (format_ == RowFormat::Csv) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      std::fprintf(out_, "%s%s", i ? "," : "", csv_field(columns_[i]).c_str());
    }
    std::fprintf(out_, "\n");
    for (const ordered_json& r : flat_rows_) {
      for (size_t i = 0; i < columns_.size(); ++i) {
        const auto it = r.find(columns_[i]);
        std::fprintf(out_, "%s%s", i ? "," : "", it == r.end() ? "" : cell(*it).c_str());
      }
      std::fprintf(out_, "\n");
    }
  }
  std::fflush(out_);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q(1, '"');
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

}  // namespace fasa
