#include "fasa/engine/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fasa {

namespace {

using ojson = nlohmann::ordered_json;
using Kind = GrammarNode::Kind;

constexpr int kMaxDepth = 128;  // schemas nested in schemas (a request must not blow the stack)
constexpr size_t kMaxShownBytes = 60;  // of a name or value quoted in a message

// Keywords that describe and never constrain, or that only widen what is valid: ignored.
// ($defs and definitions hold schemas that $ref reaches; they are compiled only then.)
constexpr std::string_view kIgnored[] = {
    "title",         "description", "default",   "examples", "$comment", "$schema",
    "deprecated",    "readOnly",    "writeOnly", "nullable", "$defs",    "definitions",
    "discriminator",  // OpenAPI's hint for a oneOf: the alternatives stay as they are
};
constexpr std::string_view kCompiled[] = {
    "type",  "properties", "required", "additionalProperties",
    "items", "minItems",   "maxItems", "enum",
    "const", "anyOf",      "oneOf",    "allOf",
    "$ref",
};
// Formats whose values are all that generation emits anyway: any string; whole numbers of at
// most 15 digits; numbers whose exponent has at most 2 digits.
constexpr std::string_view kIgnoredFormats[] = {"password", "binary", "int64", "double"};
constexpr std::string_view kTypes[] = {"object",  "array",   "string", "number",
                                       "integer", "boolean", "null"};

bool listed(std::span<const std::string_view> list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string cut(const std::string& s) {
  if (s.size() <= kMaxShownBytes) return s;
  size_t n = kMaxShownBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "...";
}

// The JSON pointer of `key` inside the schema at `ptr` ('~' and '/' escaped as RFC 6901 says).
std::string child(const std::string& ptr, std::string_view key) {
  std::string out = ptr + "/";
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// A keyword at `ptr` (the schema holding it) that cannot be compiled: "'pattern' at
// #/properties/name/pattern is not supported".
[[noreturn]] void refuse(const std::string& keyword, const std::string& ptr,
                         const std::string& why) {
  const std::string at = cut(child(ptr, keyword));
  throw SchemaError(fmt::format("'{}' at {} {}", cut(keyword), at, why), keyword, at);
}

bool fits_type(const ojson& v, std::string_view type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>());
  }
  if (type == "boolean") return v.is_boolean();
  return v.is_null();
}

// The pointer names a $ref keyword (a node made for one).
bool is_ref(const std::string& where) {
  return where.size() >= 5 && where.compare(where.size() - 5, 5, "/$ref") == 0;
}

GrammarNode literal_node(std::vector<std::string> texts) {
  GrammarNode n;
  n.kind = Kind::Literal;
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  n.texts = std::move(texts);
  return n;
}

GrammarNode alias_node(int target) {
  GrammarNode n;
  n.kind = Kind::AnyOf;
  n.alts = {target};
  return n;
}

class Compiler {
 public:
  explicit Compiler(const ojson& root) : root_(root) {}
  Grammar run();

 private:
  int add(GrammarNode n) {
    g_.nodes.push_back(std::move(n));
    return static_cast<int>(g_.nodes.size()) - 1;
  }
  int compile(const ojson& s, const std::string& ptr, int depth);
  GrammarNode build(const ojson& s, const std::string& ptr, int depth);
  void check_keywords(const ojson& s, const std::string& ptr) const;
  void only_with(const ojson& s, const std::string& keyword, const std::string& ptr,
                 std::span<const std::string_view> also = {}) const;
  int ref(const ojson& v, const std::string& ptr, int depth);
  std::vector<std::string> types(const ojson& s, const std::string& ptr) const;
  GrammarNode typed(const ojson& s, const std::string& type, const std::string& ptr, int depth);
  GrammarNode object(const ojson& s, const std::string& ptr, int depth);
  GrammarNode array(const ojson& s, const std::string& ptr, int depth);
  GrammarNode literal(const ojson& s, const std::string& ptr) const;
  int any();
  void check_alias_cycles() const;

  const ojson& root_;
  Grammar g_;
  std::map<std::string, int> by_pointer_;  // every schema compiled, by its JSON pointer
  int any_ = -1;                           // the node of any JSON value, once made
};

Grammar Compiler::run() {
  g_.root = compile(root_, "#", 0);
  check_alias_cycles();
  mark_finite(g_);
  if (!g_.finite[g_.root]) {
    std::string where = "#";  // a $ref on the recursion with no way out
    for (size_t i = 0; i < g_.nodes.size() && where == "#"; ++i) {
      if (!g_.finite[i] && is_ref(g_.nodes[i].where)) where = g_.nodes[i].where;
    }
    throw SchemaError(fmt::format("'$ref' at {} recurses with no way out: the schema admits no "
                                  "value of finite length",
                                  cut(where)),
                      "$ref", cut(where));
  }
  return std::move(g_);
}

int Compiler::compile(const ojson& s, const std::string& ptr, int depth) {
  if (depth > kMaxDepth) {
    throw SchemaError(fmt::format("the schema at {} nests deeper than {} levels", cut(ptr),
                                  kMaxDepth),
                      "", cut(ptr));
  }
  const auto it = by_pointer_.find(ptr);
  if (it != by_pointer_.end()) return it->second;  // a $ref reached it before (or a cycle)
  const int id = add({});
  by_pointer_[ptr] = id;
  GrammarNode n = build(s, ptr, depth);
  if (n.where.empty()) n.where = ptr;
  g_.nodes[id] = std::move(n);
  return id;
}

void Compiler::check_keywords(const ojson& s, const std::string& ptr) const {
  for (const auto& [key, v] : s.items()) {
    if (listed(kIgnored, key)) continue;
    if (key == "format") {
      if (v.is_string() && listed(kIgnoredFormats, v.get_ref<const std::string&>())) continue;
      refuse(key, ptr,
             fmt::format("{} is not supported (only password, binary, int64 and double, which "
                         "do not restrict the text)",
                         cut(v.dump())));
    }
    if (key == "uniqueItems") {
      if (v == false) continue;
      refuse(key, ptr, "true is not supported");
    }
    if (!listed(kCompiled, key)) refuse(key, ptr, "is not supported");
  }
}

// `keyword` takes the whole schema: beside it only annotations (and the keywords `also`).
void Compiler::only_with(const ojson& s, const std::string& keyword, const std::string& ptr,
                         std::span<const std::string_view> also) const {
  for (const auto& [key, v] : s.items()) {
    if (key == keyword || listed(kIgnored, key) || listed(also, key) || key == "format") continue;
    if (key == "uniqueItems" && v == false) continue;
    refuse(key, ptr, fmt::format("beside '{}' is not supported", keyword));
  }
}

GrammarNode Compiler::build(const ojson& s, const std::string& ptr, int depth) {
  if (s.is_boolean()) {
    if (s.get<bool>()) return alias_node(any());
    throw SchemaError(fmt::format("'false' schema at {} is not supported: no value satisfies it",
                                  cut(ptr)),
                      "false", cut(ptr));
  }
  if (!s.is_object()) {
    throw SchemaError(fmt::format("the schema at {} must be an object or a boolean (got {})",
                                  cut(ptr), s.is_array() ? "an array" : cut(s.dump())),
                      "", cut(ptr));
  }
  check_keywords(s, ptr);
  if (s.contains("$ref")) {
    only_with(s, "$ref", ptr);
    GrammarNode n = alias_node(ref(s["$ref"], ptr, depth));
    n.where = child(ptr, "$ref");
    return n;
  }
  if (s.contains("allOf")) {
    only_with(s, "allOf", ptr);
    const ojson& all = s["allOf"];
    if (!all.is_array() || all.size() != 1) refuse("allOf", ptr, "must hold exactly one schema");
    return alias_node(compile(all[0], child(child(ptr, "allOf"), "0"), depth + 1));
  }
  for (const char* keyword : {"anyOf", "oneOf"}) {  // oneOf taken as anyOf
    if (!s.contains(keyword)) continue;
    only_with(s, keyword, ptr);
    const ojson& alts = s[keyword];
    if (!alts.is_array() || alts.empty()) refuse(keyword, ptr, "must be a non-empty array");
    GrammarNode n;
    n.kind = Kind::AnyOf;
    for (size_t i = 0; i < alts.size(); ++i) {
      n.alts.push_back(compile(alts[i], child(child(ptr, keyword), std::to_string(i)), depth + 1));
    }
    return n;
  }
  if (s.contains("enum") || s.contains("const")) return literal(s, ptr);
  std::vector<std::string> ts = types(s, ptr);
  if (ts.empty()) {
    for (const char* k : {"properties", "required", "additionalProperties"}) {
      if (s.contains(k)) ts = {"object"};
    }
    for (const char* k : {"items", "minItems", "maxItems"}) {
      if (ts.empty() && s.contains(k)) ts = {"array"};
    }
    if (ts.empty()) return alias_node(any());
  }
  if (ts.size() == 1) return typed(s, ts[0], ptr, depth);
  GrammarNode n;
  n.kind = Kind::AnyOf;
  for (const std::string& t : ts) {
    GrammarNode alt = typed(s, t, ptr, depth);
    alt.where = ptr;
    n.alts.push_back(add(std::move(alt)));
  }
  return n;
}

int Compiler::ref(const ojson& v, const std::string& ptr, int depth) {
  if (!v.is_string()) refuse("$ref", ptr, "must be a string");
  const std::string& r = v.get_ref<const std::string&>();
  if (r.empty() || r[0] != '#') {
    refuse("$ref", ptr,
           fmt::format("'{}' is not supported: only local references ('#...')", cut(r)));
  }
  const ojson* target = nullptr;
  try {
    const ojson::json_pointer jp(r.substr(1));
    if (root_.contains(jp)) target = &root_.at(jp);
  } catch (const nlohmann::json::exception&) {
  }
  if (target == nullptr) refuse("$ref", ptr, fmt::format("'{}' does not resolve", cut(r)));
  return compile(*target, r, depth + 1);
}

std::vector<std::string> Compiler::types(const ojson& s, const std::string& ptr) const {
  std::vector<std::string> out;
  if (!s.contains("type")) return out;
  const ojson& t = s["type"];
  auto one = [&](const ojson& x) {
    if (!x.is_string() || !listed(kTypes, x.get_ref<const std::string&>())) {
      refuse("type", ptr,
             fmt::format("must name object, array, string, number, integer, boolean or null "
                         "(got {})",
                         cut(x.dump())));
    }
    if (std::find(out.begin(), out.end(), x.get<std::string>()) == out.end()) {
      out.push_back(x.get<std::string>());
    }
  };
  if (!t.is_array()) {
    one(t);
  } else {
    if (t.empty()) refuse("type", ptr, "must not be an empty list");
    for (const ojson& x : t) one(x);
  }
  return out;
}

GrammarNode Compiler::typed(const ojson& s, const std::string& type, const std::string& ptr,
                            int depth) {
  if (type == "object") return object(s, ptr, depth);
  if (type == "array") return array(s, ptr, depth);
  if (type == "boolean") return literal_node({"false", "true"});
  if (type == "null") return literal_node({"null"});
  GrammarNode n;
  n.kind = type == "string" ? Kind::String : type == "number" ? Kind::Number : Kind::Integer;
  return n;
}

GrammarNode Compiler::object(const ojson& s, const std::string& ptr, int depth) {
  GrammarNode n;
  n.kind = Kind::Object;
  std::vector<std::string> names;
  if (s.contains("properties")) {
    const ojson& props = s["properties"];
    if (!props.is_object()) refuse("properties", ptr, "must be an object");
    for (const auto& [name, sub] : props.items()) {
      GrammarNode::Property p;
      p.key = ojson(name).dump();
      p.node = compile(sub, child(child(ptr, "properties"), name), depth + 1);
      n.props.push_back(std::move(p));
      names.push_back(name);
    }
  }
  if (s.contains("required")) {
    const ojson& req = s["required"];
    if (!req.is_array()) refuse("required", ptr, "must be an array of property names");
    for (const ojson& name : req) {
      const auto at = name.is_string()
                          ? std::find(names.begin(), names.end(), name.get<std::string>())
                          : names.end();
      if (at == names.end()) {
        refuse("required", ptr,
               fmt::format("names {}, which 'properties' does not list", cut(name.dump())));
      }
      n.props[at - names.begin()].required = true;
    }
  }
  if (s.contains("additionalProperties")) {
    const ojson& more = s["additionalProperties"];
    int extra = -1;
    if (more.is_object()) {
      extra = compile(more, child(ptr, "additionalProperties"), depth + 1);
    } else if (more == true) {
      extra = any();
    } else if (more != false) {
      refuse("additionalProperties", ptr, "must be a boolean or a schema");
    }
    if (n.props.empty()) n.extra = extra;  // keys the model chooses, only where none is listed
  }
  n.key_order.resize(n.props.size());
  std::iota(n.key_order.begin(), n.key_order.end(), 0);
  std::sort(n.key_order.begin(), n.key_order.end(),
            [&](int a, int b) { return n.props[a].key < n.props[b].key; });
  n.first_required.assign(n.props.size() + 1, static_cast<int>(n.props.size()));
  for (int i = static_cast<int>(n.props.size()) - 1; i >= 0; --i) {
    n.first_required[i] = n.props[i].required ? i : n.first_required[i + 1];
  }
  return n;
}

GrammarNode Compiler::array(const ojson& s, const std::string& ptr, int depth) {
  GrammarNode n;
  n.kind = Kind::Array;
  if (!s.contains("items")) {
    n.items = any();
  } else if (s["items"].is_array()) {
    refuse("items", ptr, "as a list of schemas (a tuple) is not supported");
  } else {
    n.items = compile(s["items"], child(ptr, "items"), depth + 1);
  }
  auto count = [&](const char* keyword) {
    const ojson& v = s[keyword];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > (1u << 30)) {
      refuse(keyword, ptr, "must be a non-negative integer (at most 2^30)");
    }
    return static_cast<int>(v.get<uint64_t>());
  };
  if (s.contains("minItems")) n.min_items = count("minItems");
  if (s.contains("maxItems")) n.max_items = count("maxItems");
  if (n.max_items >= 0 && n.min_items > n.max_items) {
    refuse("minItems", ptr, fmt::format("is above maxItems ({} > {})", n.min_items, n.max_items));
  }
  return n;
}

GrammarNode Compiler::literal(const ojson& s, const std::string& ptr) const {
  constexpr std::string_view kBeside[] = {"type", "enum", "const"};
  const char* keyword = s.contains("enum") ? "enum" : "const";
  only_with(s, keyword, ptr, kBeside);
  std::vector<const ojson*> values;
  if (s.contains("enum")) {
    const ojson& all = s["enum"];
    if (!all.is_array()) refuse("enum", ptr, "must be an array");
    for (const ojson& v : all) {
      if (!s.contains("const") || v == s["const"]) values.push_back(&v);
    }
  } else {
    values.push_back(&s["const"]);
  }
  const std::vector<std::string> ts = types(s, ptr);
  std::vector<std::string> texts;
  for (const ojson* v : values) {
    const bool fits = ts.empty() || std::any_of(ts.begin(), ts.end(),
                                                [&](const auto& t) { return fits_type(*v, t); });
    if (fits) texts.push_back(v->dump());
  }
  if (texts.empty()) {
    refuse(keyword, ptr,
           s.contains("enum") && s["enum"].empty()
               ? std::string("must not be empty")
               : "admits no value (none fits 'type' or 'const')");
  }
  return literal_node(std::move(texts));
}

int Compiler::any() {
  if (any_ >= 0) return any_;
  any_ = add(GrammarNode{});
  GrammarNode obj;
  obj.kind = Kind::Object;
  obj.extra = any_;
  obj.first_required = {0};
  GrammarNode arr;
  arr.kind = Kind::Array;
  arr.items = any_;
  GrammarNode str;
  str.kind = Kind::String;
  GrammarNode num;
  num.kind = Kind::Number;
  std::vector<int> alts = {add(std::move(obj)), add(std::move(arr)), add(std::move(str)),
                           add(std::move(num)), add(literal_node({"false", "null", "true"}))};
  for (int id : alts) g_.nodes[id].where = "(any value)";
  g_.nodes[any_].alts = std::move(alts);
  g_.nodes[any_].where = "(any value)";
  return any_;
}

// An anyOf (or $ref) that reaches itself through anyOfs alone would expand forever before
// reading a byte: refused, naming a $ref on the cycle.
void Compiler::check_alias_cycles() const {
  enum : char { kNew, kOpen, kDone };
  std::vector<char> color(g_.nodes.size(), kNew);
  std::vector<int> path;
  auto visit = [&](auto&& self, int id) -> void {
    color[id] = kOpen;
    path.push_back(id);
    for (int alt : g_.nodes[id].alts) {
      if (g_.nodes[alt].kind != Kind::AnyOf || color[alt] == kDone) continue;
      if (color[alt] == kOpen) {
        std::string where = g_.nodes[alt].where;
        for (auto p = std::find(path.begin(), path.end(), alt); p != path.end(); ++p) {
          if (is_ref(g_.nodes[*p].where)) where = g_.nodes[*p].where;
        }
        throw SchemaError(fmt::format("'$ref' at {} makes a cycle that passes through no object "
                                      "or array",
                                      cut(where)),
                          "$ref", cut(where));
      }
      self(self, alt);
    }
    path.pop_back();
    color[id] = kDone;
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (g_.nodes[i].kind == Kind::AnyOf && color[i] == kNew) visit(visit, static_cast<int>(i));
  }
}

bool finite_now(const Grammar& g, const GrammarNode& n) {
  const auto finite = [&](int i) { return g.finite[i] != 0; };
  switch (n.kind) {
    case Kind::String:
    case Kind::Number:
    case Kind::Integer: return true;
    case Kind::Literal: return !n.texts.empty();
    case Kind::Object:
      return std::all_of(n.props.begin(), n.props.end(),
                         [&](const auto& p) { return !p.required || finite(p.node); });
    case Kind::Array: return n.min_items == 0 || finite(n.items);
    case Kind::AnyOf: return std::any_of(n.alts.begin(), n.alts.end(), finite);
    case Kind::Sequence: return std::all_of(n.parts.begin(), n.parts.end(), finite);
  }
  return false;
}

}  // namespace

void mark_finite(Grammar& g) {
  g.finite.assign(g.nodes.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!g.finite[i] && finite_now(g, g.nodes[i])) {
        g.finite[i] = 1;
        changed = true;
      }
    }
  }
}

Grammar compile_json_schema(const nlohmann::ordered_json& schema) { return Compiler(schema).run(); }

Grammar choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) fail("guided_choice: no choice given");
  for (const std::string& c : choices) {
    if (c.empty()) fail("guided_choice: a choice is empty");
  }
  Grammar g;
  g.nodes.push_back(literal_node(choices));
  g.nodes[0].where = "#";
  g.finite = {1};
  g.json = false;
  return g;
}

}  // namespace fasa
