// JSON-constrained decoding (the OpenAI API's response_format {"type": "json_object"}): the
// generated text is kept a prefix of one JSON object. JsonPrefix is a byte-level pushdown
// automaton that says whether text can still grow into a valid JSON text (RFC 8259) whose top
// value is an object; JsonConstraint masks, before each sampling step, every token whose bytes
// would break that, and allows an end-of-generation token only once the object is complete
// (and then nothing else). Whitespace between tokens is capped (kMaxSpaces in a row) so a model
// cannot loop on it forever.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fasa {

class Tokenizer;

class JsonPrefix {
 public:
  static constexpr int kMaxSpaces = 16;
  // Feeds one byte; false (state unchanged in meaning: do not feed more) when the text so far
  // plus this byte is no prefix of a JSON object.
  bool feed(unsigned char c);
  bool feed(std::string_view bytes);
  // The text so far is a complete JSON object (nothing may follow but whitespace, which the
  // constraint does not offer).
  bool complete() const { return mode_ == Mode::Done; }

 private:
  enum class Mode : uint8_t {
    Start,       // before the top-level object: whitespace or '{'
    Value,       // a value must come (after ':' or ',' in an array)
    ArrayFirst,  // after '[': a value or ']'
    ObjFirst,    // after '{': a key or '}'
    Key,         // after ',' in an object: a key
    Colon,       // after a key: ':'
    After,       // after a value in a container: ',' or the closing bracket
    String,      // inside a string (key_ says whether it is a key)
    Escape,      // after '\' in a string
    Hex,         // in \uXXXX (hex_ digits still to come)
    Number,      // inside a number (num_ is its sub-state)
    Literal,     // inside true / false / null
    Done,        // the top-level object closed
  };
  enum class Num : uint8_t { Minus, Zero, Int, Dot, Frac, E, ESign, Exp };
  bool value_start(unsigned char c);
  bool after_value(unsigned char c);  // a value ended; c follows it
  bool number(unsigned char c);
  bool space(unsigned char c);
  bool close();  // the innermost container ends

  Mode mode_ = Mode::Start;
  Num num_ = Num::Int;
  bool key_ = false;           // the string being read is an object key
  int hex_ = 0;                // \u digits left
  const char* lit_ = nullptr;  // the literal being matched, and how far
  int lit_at_ = 0;
  int spaces_ = 0;           // whitespace bytes in a row
  std::vector<char> stack_;  // open containers: '{' or '['
};

class JsonConstraint {
 public:
  explicit JsonConstraint(const Tokenizer& tok);
  // Sets logits[id] = -inf for every id the constraint does not allow next. logits: [n_vocab]
  void mask(float* logits, int n_vocab) const;
  // Advances by the token sampled (one mask() allowed).
  void accept(int32_t id);
  bool complete() const { return state_.complete(); }

 private:
  const Tokenizer& tok_;
  std::vector<std::string> bytes_;  // [n_vocab] each token's bytes ("" for special tokens)
  std::vector<char> eog_;           // [n_vocab] end-of-generation ids
  JsonPrefix state_;
};

}  // namespace fasa
