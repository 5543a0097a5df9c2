// The report of a bench run (eval/bench.h): a markdown table, or one self-contained JSON object
// per row in llama-bench's machine-readable formats: JSON Lines (printed as each test finishes,
// so an interrupted run keeps what it measured), one JSON array, or CSV (the columns are every
// key of every row in first-seen order, so the table is printed at the end; nested objects
// become "a.b" columns, arrays are joined with ';'). Markdown rows are printed as measured too.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/eval/bench.h"
#include "fasa/kernels/bandwidth.h"
#include "fasa/model/model.h"

namespace fasa {

enum class RowFormat { Markdown, JsonLines, Json, Csv };

// "md" | "jsonl" | "json" | "csv"; throws fasa::Error naming the value otherwise.
RowFormat parse_row_format(const std::string& name);

// Machine-readable rows, one object each, in one of the formats above but markdown.
class RowWriter {
 public:
  explicit RowWriter(RowFormat format, std::FILE* out = stdout) : format_(format), out_(out) {}
  void add(const nlohmann::ordered_json& row);
  void finish();  // closes the JSON array, prints the CSV table

 private:
  RowFormat format_;
  std::FILE* out_;
  int n_rows_ = 0;
  std::vector<std::string> columns_;               // CSV: first-seen order
  std::vector<nlohmann::ordered_json> flat_rows_;  // CSV: flattened rows
};

// One CSV field: as is, or quoted (with doubled quotes) when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);

// Adds the build and input hashes of a result row measured under `policy` (the CLI's and the
// Python package's provenance fields); may be null.
using BenchProvenance = std::function<void(nlohmann::ordered_json& row, const std::string& policy)>;

// Prints the header once, then each test's rows (one per policy) as they are measured.
class BenchReport {
 public:
  BenchReport(RowFormat format, const Model& model, const BenchSettings& settings,
              const BandwidthResult& bw, BenchProvenance provenance, std::FILE* out = stdout);

  void header();  // markdown: the run's context and the table's head; other formats: nothing
  // The same settings measured again at another thread count (`fasa bench -t 1,2`), with that
  // run's bandwidth probe: markdown starts a table of its own (its header names the threads);
  // the other formats go on with the same rows, each naming its threads.
  void next_run(const BandwidthResult& bw);
  // One test's rows; group[0] is the first policy, the base of "vs first".
  void rows(const std::vector<BenchMeasure>& group);
  void finish();  // closes a JSON array, prints a CSV table
  // The self-contained object of one row (what every machine-readable format prints).
  nlohmann::ordered_json json_row(const BenchMeasure& m) const;

 private:
  void markdown_row(const BenchMeasure& m, const BenchMeasure& base) const;

  RowFormat format_;
  const Model& model_;
  const BenchSettings& s_;
  BandwidthResult bw_;
  BenchProvenance provenance_;
  std::FILE* out_;
  RowWriter writer_;
};

// The object of a run that only measured the bandwidth: read_bandwidth_gb_s, threads, bytes.
nlohmann::ordered_json bandwidth_json(const BandwidthResult& bw);
// The report of a run that only measured the bandwidth: one line, or that object.
void print_bandwidth_only(RowFormat format, const BandwidthResult& bw, std::FILE* out = stdout);

}  // namespace fasa
