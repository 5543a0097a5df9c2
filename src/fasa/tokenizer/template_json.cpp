#include "fasa/tokenizer/template_json.h"

namespace fasa {

namespace {

using ojson = nlohmann::ordered_json;

void write(std::string& out, const ojson& v, int indent, int depth) {
  const bool object = v.is_object();
  if (!object && !v.is_array()) {
    out += v.dump(-1, ' ', false);  // scalars: the same text as Python writes
    return;
  }
  if (v.empty()) {
    out += object ? "{}" : "[]";
    return;
  }
  const std::string pad = indent < 0 ? "" : "\n" + std::string(indent * (depth + 1), ' ');
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += first ? pad : (indent < 0 ? ", " : "," + pad);
    first = false;
    if (object) out += ojson(it.key()).dump(-1, ' ', false) + ": ";
    write(out, *it, indent, depth + 1);
  }
  if (indent >= 0) out += "\n" + std::string(indent * depth, ' ');
  out += object ? '}' : ']';
}

}  // namespace

std::string template_json(const ojson& v, int indent) {
  std::string out;
  write(out, v, indent, 0);
  return out;
}

}  // namespace fasa
