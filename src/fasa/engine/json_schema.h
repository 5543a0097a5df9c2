// Structured outputs: a JSON Schema (the subset that OpenAI's structured outputs, pydantic and
// LangChain send) compiled once per request into a Grammar, a graph of value nodes that
// GrammarPrefix (grammar_prefix.h) walks byte by byte; and vLLM's guided_choice as a grammar of
// a list of exact texts.
//
// Supported keywords: type (a name or a list of names: object, array, string, number, integer,
// boolean, null), properties, required, additionalProperties (false, true or a schema), items
// (one schema), minItems, maxItems, enum, const, anyOf, oneOf (taken as anyOf), allOf of one
// schema, $ref to a local JSON pointer ("#", "#/$defs/Name", "#/definitions/Name", ...; a cycle
// must pass through an object or an array), $defs and definitions. Ignored (annotations, or
// keywords that only widen what is valid): title, description, default, examples, $comment,
// $schema, deprecated, readOnly, writeOnly, discriminator, nullable, uniqueItems false, and
// format password, binary, int64, double. Every other keyword is refused: a SchemaError naming
// it and its JSON pointer ("#/properties/name/pattern").
//
// What generation emits is a part of what the schema accepts: an object's listed properties in
// the schema's order, every required one and the optional ones the model chooses, and no other
// key, whatever additionalProperties says (it matters only for an object that lists no
// properties: true or a schema then lets the model choose the keys; absent or false allows only
// {}); numbers with at most 15 digits before the point, 15 after it and 2 in the exponent;
// integers without a fraction or an exponent; enum and const values as compact JSON text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "fasa/core/error.h"

namespace fasa {

// A schema this compiler does not take, naming the keyword and its JSON pointer.
class SchemaError : public Error {
 public:
  SchemaError(const std::string& message, std::string keyword, std::string pointer)
      : Error(message), keyword(std::move(keyword)), pointer(std::move(pointer)) {}
  std::string keyword;  // e.g. "pattern"
  std::string pointer;  // e.g. "#/properties/name/pattern"
};

struct GrammarNode {
  enum class Kind : uint8_t { Object, Array, String, Number, Integer, Literal, AnyOf, Sequence };
  struct Property {
    std::string key;  // the key as JSON text, quotes included: "\"name\""
    int node = -1;
    bool required = false;
  };
  Kind kind = Kind::AnyOf;
  std::string where;  // the schema's JSON pointer
  // Object: the listed properties in the schema's order; key_order: their indices sorted by
  // key text; first_required[i]: the first required index >= i ([props + 1], props.size() when
  // none). extra: with no property listed, the node of every value of a key the model chooses
  // (-1: the object is {}).
  std::vector<Property> props;
  std::vector<int> key_order;
  std::vector<int> first_required;
  int extra = -1;
  int items = -1;  // Array: its elements' node, between min_items and max_items (-1: no maximum)
  int min_items = 0;
  int max_items = -1;
  std::vector<std::string> texts;  // Literal: the exact texts it may be, sorted, unique
  std::vector<int> alts;           // AnyOf: the alternatives
  std::vector<int> parts;          // Sequence: values one after another (grammar_compose.h)
  // No whitespace before the value, even in a JSON grammar (exact text around JSON values).
  bool raw = false;
};

struct Grammar {
  std::vector<GrammarNode> nodes;
  std::vector<char> finite;  // [nodes] the node has a value of finite length
  int root = 0;
  bool json = true;  // a JSON text (whitespace between tokens); guided_choice's texts are not
};

// finite[i] for every node: whether some value of it has finite length (least fixed point).
void mark_finite(Grammar& g);

// Throws SchemaError for a keyword outside the subset, a malformed or unresolvable keyword, or
// a schema that no value of finite length satisfies. `schema` keeps its keys' order (the order
// properties are emitted in).
Grammar compile_json_schema(const nlohmann::ordered_json& schema);

// Exactly one of `choices` (raw text, no JSON quoting). Throws Error when there is none.
Grammar choice_grammar(const std::vector<std::string>& choices);

}  // namespace fasa
