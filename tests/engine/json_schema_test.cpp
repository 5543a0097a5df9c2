// Structured outputs' schema compiler (compile_json_schema, choice_grammar) and its byte-level
// walk (GrammarPrefix): every supported keyword, nesting, $ref and recursion, enum, const,
// anyOf; every refusal names the keyword and its JSON pointer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/engine/grammar_prefix.h"
#include "fasa/engine/json_schema.h"
#include "support/schema_check.h"

namespace fasa {
namespace {

using ojson = nlohmann::ordered_json;

// What pydantic v2 writes for a model with an enum field and an Optional nested model.
const char* kCity = R"({
  "$defs": {
    "Kind": {"enum": ["capital", "town", "village"], "title": "Kind", "type": "string"},
    "Mayor": {"properties": {"name": {"title": "Name", "type": "string"},
                             "since": {"title": "Since", "type": "integer"}},
              "required": ["name", "since"], "title": "Mayor", "type": "object",
              "additionalProperties": false}
  },
  "properties": {
    "name": {"title": "Name", "type": "string", "description": "the city's name"},
    "population": {"title": "Population", "type": "integer"},
    "area_km2": {"type": "number"},
    "is_capital": {"title": "Is Capital", "type": "boolean"},
    "kind": {"$ref": "#/$defs/Kind"},
    "mayor": {"anyOf": [{"$ref": "#/$defs/Mayor"}, {"type": "null"}], "default": null},
    "districts": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "nickname": {"type": ["string", "null"]}
  },
  "required": ["name", "population", "area_km2", "is_capital", "kind", "mayor"],
  "title": "City", "type": "object"
})";

// Feeds `text` byte by byte: every prefix must be accepted and the text complete at its end.
void expect_accepted(const Grammar& g, const std::string& text) {
  SCOPED_TRACE(text);
  GrammarPrefix p(g);
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_TRUE(p.feed(static_cast<unsigned char>(text[i]))) << "refused at byte " << i;
  }
  EXPECT_TRUE(p.complete());
}

// Some byte of `text` is refused, or the text ends incomplete.
void expect_refused(const Grammar& g, const std::string& text) {
  SCOPED_TRACE(text);
  GrammarPrefix p(g);
  EXPECT_FALSE(p.feed(text) && p.complete());
}

TEST(JsonSchema, CityAcceptsItsValuesInTheSchemasOrder) {
  const ojson schema = ojson::parse(kCity);
  const Grammar g = compile_json_schema(schema);
  const std::vector<std::string> good = {
      R"({"name":"Paris","population":2102650,"area_km2":105.4,"is_capital":true,)"
      R"("kind":"capital","mayor":{"name":"Anne","since":2014},"districts":["a","b"],)"
      R"("nickname":null})",
      R"({ "name" : "Ys\u00e9 \"x\" é ✓", "population": -0, "area_km2": 1e5, )"
      R"("is_capital": false, "kind": "village", "mayor": null })",
      "{\n  \"name\": \"\",\n  \"population\": 7,\n  \"area_km2\": -0.5E-3,\n"
      "  \"is_capital\": true,\n  \"kind\": \"town\",\n  \"mayor\": null,\n"
      "  \"districts\": [],\n  \"nickname\": \"x\"\n}",
  };
  for (const std::string& text : good) {
    expect_accepted(g, text);
    EXPECT_EQ(test::text_violation(text, schema), "");
  }
  const std::vector<std::string> bad = {
      // order: population before name
      R"({"population":1,"name":"P","area_km2":1,"is_capital":true,"kind":"town","mayor":null})",
      // a required property missing
      R"({"name":"P","population":1,"is_capital":true,"kind":"town","mayor":null})",
      // a key the schema does not list
      R"({"name":"P","population":1,"area_km2":1,"is_capital":true,"kind":"town","mayor":null,)"
      R"("extra":1})",
      R"({"name":"P","population":1.5,)",                            // an integer with a fraction
      R"({"name":"P","population":1e3,)",                            // or an exponent
      R"({"name":"P","population":01,)",                             // a leading zero
      R"({"name":"P","population":1,"area_km2":1,"is_capital":1,)",  // not a boolean
      R"({"name":"P","population":1,"area_km2":1,"is_capital":true,"kind":"city",)",  // enum
      R"({"name":"P","population":1,"area_km2":1,"is_capital":true,"kind":"town",)"
      R"("mayor":{"name":"A"}})",  // the nested required "since"
      R"({"name":"P","population":1,"area_km2":1,"is_capital":true,"kind":"town","mayor":null,)"
      R"("districts":["a","b","c","d"]})",  // maxItems
      R"({"name":"P","population":1,"area_km2":1,"is_capital":true,"kind":"town","mayor":null,)"
      R"("nickname":3})",                               // type list
      "{\"name\":\"a\x01\"",                            // a control character in a string
      "{\"name\":\"\\ud800\"",                          // a surrogate escape
      "{\"name\":\"\xC3\x28\"",                         // broken UTF-8
      R"({"name":"P","population":1234567890123456,)",  // more than 15 digits
  };
  for (const std::string& text : bad) expect_refused(g, text);
  // Leading whitespace is fine, trailing whitespace and text are not.
  GrammarPrefix p(g);
  ASSERT_TRUE(p.feed(good[1]));
  EXPECT_FALSE(p.feed(' '));
  EXPECT_FALSE(p.feed('x'));
}

TEST(JsonSchema, OptionalPropertiesMayBeSkippedButNotReordered) {
  const Grammar g = compile_json_schema(ojson::parse(R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"},
      "d": {"type": "integer"}}, "required": ["b", "d"]})"));
  for (const char* text : {R"({"b":1,"d":2})", R"({"a":0,"b":1,"d":2})",
                           R"({"a":0,"b":1,"c":2,"d":3})", R"({"b":1,"c":2,"d":3})"}) {
    expect_accepted(g, text);
  }
  for (const char* text : {R"({"d":2,"b":1})", R"({"a":0,"d":2})", R"({"b":1,"b":1,"d":2})",
                           R"({"b":1})", R"({"b":1,"d":2,"a":0})", R"({})"}) {
    expect_refused(g, text);
  }
  // Keys that share a prefix.
  const Grammar h = compile_json_schema(ojson::parse(R"({"properties": {
      "ab": {"type": "null"}, "a": {"type": "null"}, "abc": {"type": "null"}}})"));
  for (const char* text : {R"({})", R"({"ab":null,"a":null,"abc":null})", R"({"a":null})",
                           R"({"abc":null})", R"({"ab":null})"}) {
    expect_accepted(h, text);
  }
  expect_refused(h, R"({"a":null,"ab":null})");
  expect_refused(h, R"({"abcd":null})");
}

TEST(JsonSchema, FreeObjectsArraysAndAnyValues) {
  // additionalProperties: an object listing no property takes keys the model chooses.
  const Grammar map = compile_json_schema(
      ojson::parse(R"({"type": "object", "additionalProperties": {"type": "integer"}})"));
  expect_accepted(map, R"({})");
  expect_accepted(map, R"({"x": 1, "y z": -2, "x": 3})");
  expect_refused(map, R"({"x": "1"})");
  // Absent or false: only {} (as OpenAI's strict mode: no key the schema does not list).
  expect_accepted(compile_json_schema(ojson::parse(R"({"type": "object"})")), "{}");
  expect_refused(compile_json_schema(ojson::parse(R"({"type": "object"})")), R"({"a":1})");
  // Any JSON value: {}, true, or no type at all.
  for (const char* s : {R"({})", "true", R"({"description": "anything"})",
                        R"({"type": "object", "additionalProperties": true})"}) {
    const Grammar any = compile_json_schema(ojson::parse(s));
    expect_accepted(any, R"({"a": [1, "x", null, {"b": [true, false, 2.5]}], "c": {}})");
  }
  const Grammar any = compile_json_schema(ojson::parse("{}"));
  for (const char* text : {"[]", "\"s\"", "-12.5e+3", "null", "[[[]]]"}) {
    expect_accepted(any, text);
  }
  // Values nest at most kMaxNesting objects and arrays deep.
  const int deepest = GrammarPrefix::kMaxNesting;
  expect_accepted(any, std::string(deepest, '[') + std::string(deepest, ']'));
  expect_refused(any, std::string(deepest + 1, '['));
  // minItems / maxItems, items absent = any value.
  const Grammar arr =
      compile_json_schema(ojson::parse(R"({"type": "array", "minItems": 2, "maxItems": 3})"));
  expect_accepted(arr, R"([1, "two"])");
  expect_accepted(arr, R"([1, 2, [3]])");
  expect_refused(arr, R"([1])");
  expect_refused(arr, R"([1, 2, 3, 4])");
  expect_refused(arr, R"([])");
  // A number at the top level is complete while it may still grow.
  const Grammar num = compile_json_schema(ojson::parse(R"({"type": "number"})"));
  GrammarPrefix p(num);
  ASSERT_TRUE(p.feed("12"));
  EXPECT_TRUE(p.complete());
  ASSERT_TRUE(p.feed(".5"));
  EXPECT_TRUE(p.complete());
  ASSERT_TRUE(p.feed("e"));
  EXPECT_FALSE(p.complete());
}

TEST(JsonSchema, EnumConstAnyOfAndTypeLists) {
  const Grammar e = compile_json_schema(ojson::parse(R"({"enum": [1, 12, "a", null, [1, 2],
      {"k": true}, 1.5]})"));
  for (const char* text : {"1", "12", "\"a\"", "null", "[1,2]", "{\"k\":true}", "1.5"}) {
    expect_accepted(e, text);
  }
  for (const char* text : {"2", "\"b\"", "[1, 2]", "13", "true"}) expect_refused(e, text);
  // enum filtered by type; const; const within an enum.
  const Grammar typed =
      compile_json_schema(ojson::parse(R"({"type": "string", "enum": ["x", 1, "y"]})"));
  expect_accepted(typed, "\"y\"");
  expect_refused(typed, "1");
  const Grammar c = compile_json_schema(ojson::parse(R"({"const": "only"})"));
  expect_accepted(c, "\"only\"");
  expect_refused(c, "\"other\"");
  // anyOf and oneOf (as anyOf) whose alternatives share a prefix.
  const Grammar alts = compile_json_schema(ojson::parse(R"({"oneOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "null"}},
       "required": ["a", "b"]}]})"));
  expect_accepted(alts, R"({"a": 1})");
  expect_accepted(alts, R"({"a": "x", "b": null})");
  expect_refused(alts, R"({"a": 1, "b": null})");
  expect_refused(alts, R"({"a": "x"})");
  const Grammar tl = compile_json_schema(
      ojson::parse(R"({"type": ["integer", "boolean", "array"], "items": {"type": "null"}})"));
  for (const char* text : {"3", "false", "[null, null]"}) expect_accepted(tl, text);
  expect_refused(tl, "[1]");
  expect_refused(tl, "\"s\"");
}

TEST(JsonSchema, RefsDefinitionsAllOfAndRecursion) {
  // A recursive tree (pydantic's self-referencing model): recursion through an object.
  const ojson tree = ojson::parse(R"({"$ref": "#/definitions/Node", "definitions": {"Node": {
      "type": "object", "properties": {"v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
      "required": ["v", "kids"]}}})");
  const Grammar g = compile_json_schema(tree);
  const std::string text = R"({"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3, "kids": [)"
                           R"({"v": 4, "kids": []}]}]})";
  expect_accepted(g, text);
  EXPECT_EQ(test::text_violation(text, tree), "");
  // The root itself, allOf of one schema (older pydantic's $ref with a description).
  const Grammar self = compile_json_schema(ojson::parse(R"({"type": "object", "properties": {
      "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}, "required": ["next"]})"));
  expect_accepted(self, R"({"next": {"next": {"next": null}}})");
  const Grammar all = compile_json_schema(ojson::parse(R"({"$defs": {"C": {"enum": ["r", "g"]}},
      "type": "object", "properties": {"c": {"allOf": [{"$ref": "#/$defs/C"}],
      "description": "colour"}}, "required": ["c"]})"));
  expect_accepted(all, R"({"c": "g"})");
  expect_refused(all, R"({"c": "b"})");
  // A $ref to a JSON pointer with escapes, and annotations everywhere.
  const Grammar esc = compile_json_schema(ojson::parse(R"({"$defs": {"a/b~c": {"type": "null",
      "title": "t", "examples": [null], "deprecated": false, "readOnly": true}},
      "$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": "c",
      "$ref": "#/$defs/a~1b~0c"})"));
  expect_accepted(esc, "null");
  // An optional property with no finite value is never started.
  const Grammar skip = compile_json_schema(ojson::parse(R"({"$defs": {"Loop": {"type": "object",
      "properties": {"x": {"$ref": "#/$defs/Loop"}}, "required": ["x"]}},
      "type": "object", "properties": {"loop": {"$ref": "#/$defs/Loop"}, "n": {"type": "null"}}})"));
  expect_accepted(skip, R"({"n": null})");
  expect_refused(skip, R"({"loop": )");
}

TEST(JsonSchema, GuidedChoiceIsExactlyOneOfItsTexts) {
  const Grammar g = choice_grammar({"yes", "no", "yes, but", "ça"});
  for (const char* text : {"yes", "no", "yes, but", "ça"}) expect_accepted(g, text);
  for (const char* text : {" yes", "yes ", "ye", "n", "maybe", "\"yes\""}) expect_refused(g, text);
  GrammarPrefix p(g);
  ASSERT_TRUE(p.feed("yes"));
  EXPECT_TRUE(p.complete());  // and may grow into "yes, but"
  EXPECT_TRUE(p.feed(", b"));
  EXPECT_FALSE(p.complete());
  EXPECT_THROW(choice_grammar({}), Error);
  EXPECT_THROW(choice_grammar({"a", ""}), Error);
}

struct Refusal {
  const char* schema;
  const char* keyword;
  const char* pointer;
  const char* message;  // a part of it
};

TEST(JsonSchema, RefusesWhatItDoesNotSupportNamingTheKeywordAndItsPointer) {
  const Refusal cases[] = {
      {R"({"type": "string", "pattern": "a+"})", "pattern", "#/pattern", "is not supported"},
      {R"({"properties": {"name": {"type": "string", "minLength": 1}}})", "minLength",
       "#/properties/name/minLength", "is not supported"},
      {R"({"type": "string", "format": "date-time"})", "format", "#/format", "\"date-time\""},
      {R"({"type": "object", "patternProperties": {"^x": {}}})", "patternProperties",
       "#/patternProperties", "is not supported"},
      {R"({"type": "number", "minimum": 0})", "minimum", "#/minimum", "is not supported"},
      {R"({"not": {"type": "null"}})", "not", "#/not", "is not supported"},
      {R"({"type": "array", "prefixItems": [{}]})", "prefixItems", "#/prefixItems", ""},
      {R"({"type": "array", "uniqueItems": true})", "uniqueItems", "#/uniqueItems", "true"},
      {R"({"type": "array", "items": [{"type": "null"}]})", "items", "#/items", "tuple"},
      {R"({"$ref": "https://example.com/s.json"})", "$ref", "#/$ref", "only local"},
      {R"({"$ref": "#/$defs/Missing"})", "$ref", "#/$ref", "does not resolve"},
      {R"({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"anyOf": [{"$ref": "#/$defs/A"},
          {"type": "null"}]}}, "$ref": "#/$defs/A"})",
       "$ref", "/$ref", "cycle"},
      {R"({"$defs": {"A": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
          "required": ["a"]}}, "$ref": "#/$defs/A"})",
       "$ref", "/$ref", "no value of finite length"},
      {R"({"type": "object", "properties": {"e": {"enum": []}}})", "enum", "#/properties/e/enum",
       "must not be empty"},
      {R"({"type": "integer", "enum": ["a", "b"]})", "enum", "#/enum", "admits no value"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "minItems", "#/minItems", "above"},
      {R"({"type": "array", "maxItems": -1})", "maxItems", "#/maxItems", "non-negative"},
      {R"({"type": "objekt"})", "type", "#/type", "must name"},
      {R"({"type": "object", "required": ["x"]})", "required", "#/required", "\"x\""},
      {R"({"allOf": [{"type": "null"}, {"type": "null"}]})", "allOf", "#/allOf", "exactly one"},
      {R"({"$ref": "#", "type": "object"})", "type", "#/type", "beside '$ref'"},
      {R"({"anyOf": [{"type": "null"}], "type": "null"})", "type", "#/type", "beside 'anyOf'"},
      {R"({"anyOf": []})", "anyOf", "#/anyOf", "non-empty"},
      {R"({"properties": {"x": false}})", "false", "#/properties/x", "false"},
      {R"({"type": "object", "additionalProperties": 3})", "additionalProperties",
       "#/additionalProperties", "boolean or a schema"},
      {R"({"items": {"if": {}}})", "if", "#/items/if", "is not supported"},
      {R"([1])", "", "#", "an object or a boolean"},
  };
  for (const Refusal& r : cases) {
    SCOPED_TRACE(r.schema);
    try {
      compile_json_schema(ojson::parse(r.schema));
      ADD_FAILURE() << "compiled";
    } catch (const SchemaError& e) {
      EXPECT_EQ(e.keyword, r.keyword);
      EXPECT_NE(e.pointer.find(r.pointer), std::string::npos) << e.pointer;
      EXPECT_NE(std::string(e.what()).find(r.message), std::string::npos) << e.what();
      if (*r.keyword) {
        EXPECT_NE(std::string(e.what()).find(std::string("'") + r.keyword + "'"), std::string::npos)
            << e.what();
      }
      EXPECT_NE(std::string(e.what()).find(e.pointer), std::string::npos) << e.what();
    }
  }
  // Deep nesting is refused, not a stack overflow.
  std::string deep = "{}";
  for (int i = 0; i < 200; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_THROW(compile_json_schema(ojson::parse(deep)), SchemaError);
}

}  // namespace
}  // namespace fasa
