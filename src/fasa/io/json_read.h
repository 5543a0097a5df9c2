// Reading fields of JSON files with one clear error each: every message names the file (and
// line), the field and what was expected — a missing field, a wrong type, a number outside its
// range (integers must be integers: 3e9 or 2.5 for an int field is an error, never a cast) —
// and no JSON-library message reaches the user unwrapped.
//
//   const Json doc = json_parse<nlohmann::json>(text, "calib.json");
//   const JsonObject<nlohmann::json> root(doc, "calib.json");
//   const int k = root.number<int>("k", 0, 1 << 30);
//   // calib.json: field "k" must be an integer in [0, 1073741824] (got 3000000000.0)
//   const auto model = root.object("model");
//   model.number<int>("n_layers", 1, 4096);  // ... field "model.n_layers" ...
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/core/error.h"

namespace fasa {

// A JSON library exception's text without its "[json.exception.type_error.302] " prefix.
inline std::string json_error_text(const std::exception& e) {
  std::string s = e.what();
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t end = s.find("] ");
    if (end != std::string::npos) s.erase(0, end + 2);
  }
  return s;
}

// Parses a whole document; throws fasa::Error "WHERE: not valid JSON (parse error at line 3,
// column 1: ...)" (truncated files included).
template <class Json = nlohmann::json>
Json json_parse(std::string_view text, const std::string& where) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", where, json_error_text(e));
  }
}

// A value's text for an error message (long values shortened).
template <class Json>
std::string json_shown(const Json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// `v` as T (an integer or floating-point type) in [lo, hi]; `field` names it in errors.
template <class T, class Json>
T json_number(const Json& v, const std::string& where, const std::string& field, T lo, T hi) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if constexpr (std::is_integral_v<T>) {
    bool ok = false;
    T out{};
    if (v.is_number_unsigned()) {
      const uint64_t u = v.template get<uint64_t>();
      ok = std::cmp_greater_equal(u, lo) && std::cmp_less_equal(u, hi);
      out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t s = v.template get<int64_t>();
      ok = std::cmp_greater_equal(s, lo) && std::cmp_less_equal(s, hi);
      out = static_cast<T>(s);
    }
    if (!ok) {
      fail("{}: field \"{}\" must be an integer in [{}, {}] (got {})", where, field, lo, hi,
           json_shown(v));
    }
    return out;
  } else {
    const double d = v.is_number() ? v.template get<double>() : 0.0;
    if (!v.is_number() || !std::isfinite(d) || d < static_cast<double>(lo) ||
        d > static_cast<double>(hi)) {
      fail("{}: field \"{}\" must be a number in [{}, {}] (got {})", where, field, lo, hi,
           json_shown(v));
    }
    return static_cast<T>(d);
  }
}

// One JSON object of a file: `where` names the file (and line), `path` the object inside it
// ("" for the top level, "model." for a member, "heads[3]." for an array element).
template <class Json>
class JsonObject {
 public:
  JsonObject(const Json& j, std::string where, std::string path = "")
      : j_(j), where_(std::move(where)), path_(std::move(path)) {
    if (!j_.is_object()) {
      if (path_.empty()) fail("{}: expected a JSON object (got {})", where_, json_shown(j_));
      fail("{}: field \"{}\" must be an object (got {})", where_, path_.substr(0, path_.size() - 1),
           json_shown(j_));
    }
  }

  const std::string& where() const { return where_; }
  std::string field(std::string_view key) const { return path_ + std::string(key); }
  bool has(std::string_view key) const { return j_.find(std::string(key)) != j_.end(); }

  // The member, which must be present.
  const Json& at(std::string_view key) const {
    const auto it = j_.find(std::string(key));
    if (it == j_.end()) fail("{}: missing field \"{}\"", where_, field(key));
    return *it;
  }
  template <class T>
  T number(std::string_view key, T lo, T hi) const {
    return json_number<T>(at(key), where_, field(key), lo, hi);
  }
  std::string string(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string()) {
      fail("{}: field \"{}\" must be a string (got {})", where_, field(key), json_shown(v));
    }
    return v.template get<std::string>();
  }
  bool boolean(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_boolean()) {
      fail("{}: field \"{}\" must be true or false (got {})", where_, field(key), json_shown(v));
    }
    return v.template get<bool>();
  }
  JsonObject object(std::string_view key) const {
    return JsonObject(at(key), where_, field(key) + ".");
  }
  // An array member, of n_want elements when n_want >= 0.
  const Json& array(std::string_view key, int64_t n_want = -1) const {
    const Json& v = at(key);
    if (!v.is_array()) {
      fail("{}: field \"{}\" must be an array (got {})", where_, field(key), json_shown(v));
    }
    if (n_want >= 0 && v.size() != static_cast<size_t>(n_want)) {
      fail("{}: field \"{}\" has {} elements, expected {}", where_, field(key), v.size(), n_want);
    }
    return v;
  }
  // An array of numbers, each in [lo, hi].
  template <class T>
  std::vector<T> numbers(std::string_view key, T lo, T hi, int64_t n_want = -1) const {
    const Json& a = array(key, n_want);
    std::vector<T> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      out.push_back(
          json_number<T>(a[i], where_, field(key) + "[" + std::to_string(i) + "]", lo, hi));
    }
    return out;
  }
  // Element i of array member `key`, as an object.
  JsonObject element(std::string_view key, size_t i) const {
    return JsonObject(at(key)[i], where_, field(key) + "[" + std::to_string(i) + "].");
  }

 private:
  const Json& j_;
  std::string where_, path_;
};

}  // namespace fasa
