// Grammars assembled from parts: compiled JSON schemas (json_schema.h) with exact texts around
// them, objects of fixed keys, and alternatives. Tool calls need them: a call is
// "<tool_call>\n" + {"name": ..., "arguments": <the function's schema>} + "\n</tool_call>" in one
// format, one of several functions' objects in every format.
//
//   GrammarBuilder b;
//   const int args = b.include(compile_json_schema(schema));
//   const int call = b.object({{"name", b.json_texts({"\"f\""})}, {"arguments", args}});
//   Grammar g = b.finish(b.sequence({b.text("<tool_call>\n"), call, b.text("\n</tool_call>")}));
//
// Exact texts (text()) take no whitespace before them; JSON values take JSON's whitespace before
// them (capped, grammar_prefix.h), as in a schema's grammar. A Sequence or an AnyOf takes
// whitespace before it unless its first part (every alternative) is raw.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fasa/engine/json_schema.h"

namespace fasa {

class GrammarBuilder {
 public:
  // g's nodes, renumbered into this grammar; the id of its root. g must be a JSON grammar.
  int include(const Grammar& g);
  // Exactly `s` (raw bytes, not JSON; not empty), nothing before it.
  int text(const std::string& s);
  // One of these JSON texts (e.g. "\"get_weather\"", a JSON string), as a JSON value.
  int json_texts(std::vector<std::string> texts);
  int string();  // any JSON string
  // An object of exactly these keys (plain names, quoted here), in this order, all required.
  int object(const std::vector<std::pair<std::string, int>>& props);
  // A JSON array of `items`, min_items .. max_items of them (-1: no maximum).
  int array(int items, int min_items, int max_items);
  int sequence(std::vector<int> parts);  // the parts one after another; not empty
  int any_of(std::vector<int> alts);     // one of them; not empty
  // The grammar with `root` as its root. Throws Error when no value of it has finite length.
  Grammar finish(int root);

 private:
  int add(GrammarNode n);
  Grammar g_;
};

}  // namespace fasa
