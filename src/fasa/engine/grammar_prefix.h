// The byte-level walk of a Grammar (json_schema.h): whether a text can still grow into one value
// of it. Every parse the text allows is followed at once (the alternatives of an anyOf may
// share a prefix), each a stack of frames, the innermost value last; parses that reach the same
// stack merge. Whitespace between JSON tokens is capped (kMaxSpaces in a row) so a model cannot
// loop on it forever, and so are the digits of numbers (json_schema.h says how).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "fasa/engine/json_schema.h"

namespace fasa {

class GrammarPrefix {
 public:
  static constexpr int kMaxSpaces = 16;
  static constexpr int kMaxParses = 64;  // parses followed at once; further ones are dropped
  // Objects and arrays open at once at most (a value nested deeper is refused, so a model cannot
  // make every later step copy an ever longer stack). The schema compiler's own nesting limit.
  static constexpr int kMaxNesting = 128;
  static constexpr int kMaxIntDigits = 15;
  static constexpr int kMaxFracDigits = 15;
  static constexpr int kMaxExpDigits = 2;

  // The empty text. `g` must outlive this.
  explicit GrammarPrefix(const Grammar& g);
  // The state after one more byte, written into *next (whose buffers are reused); false when
  // the text plus `c` is no prefix of a value.
  bool feed_into(unsigned char c, GrammarPrefix* next) const;
  // Feeds bytes; false (and the state as it was before the failing byte) when the text plus
  // them is no prefix.
  bool feed(unsigned char c);
  bool feed(std::string_view bytes);
  // The text is a whole value. More may still follow where the value can grow (a number, or a
  // choice that is a prefix of another).
  bool complete() const;

 private:
  enum Stage : uint8_t {
    kValue,     // a value of `node` starts here (after optional whitespace)
    kObjOpen,   // after '{': a key or '}'
    kObjKey,    // after ',': a key
    kObjColon,  // after a key: ':'
    kObjAfter,  // after a property's value: ',' or '}'
    kKey,       // inside a listed key: keys key_order[a, e) of `node` match the b bytes so far
    kArrOpen,   // after '[': an element or ']'
    kArrNext,   // after ',': an element
    kArrAfter,  // after an element: ',' or ']'
    kStr,       // inside a string (sub: UTF-8 continuation bytes due)
    kEsc,       // after '\' in a string
    kHex,       // in \uXXXX (sub: hex digits due)
    kNum,       // inside a number (sub: its Num state)
    kLit,       // inside an exact text: texts[a, e) of `node` match the b bytes so far
    kSeq,       // a Sequence whose part `a` is under way above this frame (or just ended)
  };
  enum Num : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kE, kESign, kExp };
  struct Frame {
    int32_t node = -1;
    uint8_t stage = kValue;
    uint8_t sub = 0;
    int32_t a = 0;  // Object: the next property; Array: elements so far; Num: digits of this
                    // part; Hex: the escape began with d (a surrogate must not follow)
    int32_t b = 0;
    int32_t e = 0;
  };
  struct Parse {
    std::vector<Frame> stack;
    int spaces = 0;  // whitespace bytes in a row just before
    bool dead = false;
  };
  enum class Step : uint8_t { Dead, Byte, Space };

  int add(const Parse& p);  // a copy of `p` as a new parse; its index
  void advance(int k, unsigned char c);
  Step step(int k, unsigned char c);
  Step start(int k, unsigned char c);
  Step object(int k, unsigned char c);
  Step key_start(int k);
  Step key(int k, unsigned char c);
  Step array(int k, unsigned char c);
  Step element(int k, unsigned char c);
  Step string(int k, unsigned char c);
  Step number(int k, unsigned char c);
  Step literal(int k, unsigned char c);
  Step sequence(int k, unsigned char c);
  Step end_then(int k, unsigned char c);  // the value ends; `c` belongs to what follows it
  bool space(int k, unsigned char c) const;
  bool can_close(const GrammarNode& n, int next) const;
  bool has_key(const GrammarNode& n, int next, int lo, int hi) const;
  bool accepting(const Frame& f) const;
  bool seq_done(const Frame& f) const;               // a Sequence frame whose last part ended
  static bool same(const Parse& p, const Parse& q);  // equal stacks and whitespace runs
  void settle();  // drops dead parses and duplicates, keeps at most kMaxParses

  const Grammar* g_;
  std::vector<Parse> parses_;  // [n_ live, then spares that keep their capacity]
  int n_ = 0;
};

}  // namespace fasa
