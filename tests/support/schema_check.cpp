#include "support/schema_check.h"

#include <cmath>

namespace fasa::test {

namespace {

using ojson = nlohmann::ordered_json;

bool has_type(const ojson& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

std::string check(const ojson& v, const ojson& s, const ojson& root, const std::string& at);

std::string check_object(const ojson& v, const ojson& s, const ojson& root, const std::string& at) {
  const ojson none = ojson::object();
  const ojson& props = s.contains("properties") ? s["properties"] : none;
  if (s.contains("required")) {
    for (const auto& name : s["required"]) {
      if (!v.contains(name.get<std::string>())) return at + ": no " + name.dump();
    }
  }
  for (const auto& [key, x] : v.items()) {
    if (props.contains(key)) {
      const std::string e = check(x, props[key], root, at + "/" + key);
      if (!e.empty()) return e;
    } else if (s.contains("additionalProperties")) {
      const std::string e = check(x, s["additionalProperties"], root, at + "/" + key);
      if (!e.empty()) return e;
    }
  }
  return "";
}

std::string check_array(const ojson& v, const ojson& s, const ojson& root, const std::string& at) {
  if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return at + ": too short";
  if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return at + ": too long";
  if (!s.contains("items")) return "";
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string e = check(v[i], s["items"], root, at + "/" + std::to_string(i));
    if (!e.empty()) return e;
  }
  return "";
}

std::string check(const ojson& v, const ojson& s, const ojson& root, const std::string& at) {
  if (s.is_boolean()) return s.get<bool>() ? "" : at + ": false schema";
  if (s.contains("$ref")) {
    const std::string r = s["$ref"].get<std::string>();
    const std::string e = check(v, root.at(ojson::json_pointer(r.substr(1))), root, at);
    if (!e.empty()) return e;
  }
  if (s.contains("allOf")) {
    for (const auto& sub : s["allOf"]) {
      const std::string e = check(v, sub, root, at);
      if (!e.empty()) return e;
    }
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const auto& sub : s["anyOf"]) any = any || check(v, sub, root, at).empty();
    if (!any) return at + ": no anyOf alternative fits";
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const auto& sub : s["oneOf"]) n += check(v, sub, root, at).empty() ? 1 : 0;
    if (n != 1) return at + ": " + std::to_string(n) + " oneOf alternatives fit";
  }
  if (s.contains("enum")) {
    bool in = false;
    for (const auto& x : s["enum"]) in = in || x == v;
    if (!in) return at + ": not in the enum";
  }
  if (s.contains("const") && s["const"] != v) return at + ": not the const";
  if (s.contains("type")) {
    const ojson& t = s["type"];
    bool ok = false;
    if (t.is_array()) {
      for (const auto& x : t) ok = ok || has_type(v, x.get<std::string>());
    } else {
      ok = has_type(v, t.get<std::string>());
    }
    if (!ok) return at + ": not of type " + t.dump();
  }
  if (v.is_object()) return check_object(v, s, root, at);
  if (v.is_array()) return check_array(v, s, root, at);
  return "";
}

}  // namespace

std::string schema_violation(const ojson& value, const ojson& schema) {
  return check(value, schema, schema, "#");
}

std::string text_violation(const std::string& text, const ojson& schema) {
  ojson v;
  try {
    v = ojson::parse(text);
  } catch (const std::exception& e) {
    return std::string("not JSON: ") + e.what();
  }
  return schema_violation(v, schema);
}

}  // namespace fasa::test
