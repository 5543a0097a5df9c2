// Machine-readable result rows for `fasa bench -o` (llama-bench's formats): JSON Lines (one
// object per row, printed as it is measured, so an interrupted run keeps what it measured), one
// JSON array, or CSV (the columns are every key of every row in first-seen order, so the table
// is printed at the end; nested objects become "a.b" columns, arrays are joined with ';').
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fasa::cli {

enum class RowFormat { Markdown, JsonLines, Json, Csv };

// "md" | "jsonl" | "json" | "csv"; throws fasa::Error naming the value otherwise.
RowFormat parse_row_format(const std::string& name);

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

}  // namespace fasa::cli
