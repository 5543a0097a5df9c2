#include "fasa/engine/json_constraint.h"

#include <cstring>
#include <limits>

#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

namespace {

bool is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

bool JsonPrefix::close() {
  stack_.pop_back();
  mode_ = stack_.empty() ? Mode::Done : Mode::After;
  return true;
}

bool JsonPrefix::space(unsigned char c) {
  if (!is_space(c) || spaces_ >= kMaxSpaces) return false;
  spaces_ += 1;
  return true;
}

bool JsonPrefix::value_start(unsigned char c) {
  switch (c) {
    case '{':
      stack_.push_back('{');
      mode_ = Mode::ObjFirst;
      return true;
    case '[':
      stack_.push_back('[');
      mode_ = Mode::ArrayFirst;
      return true;
    case '"':
      key_ = false;
      mode_ = Mode::String;
      return true;
    case '-':
      num_ = Num::Minus;
      mode_ = Mode::Number;
      return true;
    case 't': lit_ = "true"; break;
    case 'f': lit_ = "false"; break;
    case 'n': lit_ = "null"; break;
    default:
      if (!is_digit(c)) return false;
      num_ = c == '0' ? Num::Zero : Num::Int;
      mode_ = Mode::Number;
      return true;
  }
  lit_at_ = 1;
  mode_ = Mode::Literal;
  return true;
}

bool JsonPrefix::after_value(unsigned char c) {
  if (stack_.empty()) return false;  // the top value is an object: it ends with its '}'
  mode_ = Mode::After;
  return feed(c);
}

bool JsonPrefix::number(unsigned char c) {
  switch (num_) {
    case Num::Minus:
      if (!is_digit(c)) return false;
      num_ = c == '0' ? Num::Zero : Num::Int;
      return true;
    case Num::Zero:
    case Num::Int:
    case Num::Frac:
      if (is_digit(c) && num_ != Num::Zero) return true;
      if (c == '.' && num_ != Num::Frac) {
        num_ = Num::Dot;
        return true;
      }
      if (c == 'e' || c == 'E') {
        num_ = Num::E;
        return true;
      }
      return after_value(c);  // the number is complete: c belongs to what follows
    case Num::Dot:
      if (!is_digit(c)) return false;
      num_ = Num::Frac;
      return true;
    case Num::E:
      if (c == '+' || c == '-') {
        num_ = Num::ESign;
        return true;
      }
      [[fallthrough]];
    case Num::ESign:
      if (!is_digit(c)) return false;
      num_ = Num::Exp;
      return true;
    case Num::Exp:
      if (is_digit(c)) return true;
      return after_value(c);
  }
  return false;
}

bool JsonPrefix::feed(unsigned char c) {
  if (!is_space(c) || mode_ == Mode::String) spaces_ = 0;
  switch (mode_) {
    case Mode::Start:
      if (c == '{') {
        stack_.push_back('{');
        mode_ = Mode::ObjFirst;
        return true;
      }
      return space(c);
    case Mode::Value: return space(c) || value_start(c);
    case Mode::ArrayFirst:
      if (c == ']') return close();
      return space(c) || value_start(c);
    case Mode::ObjFirst:
    case Mode::Key:
      if (c == '"') {
        key_ = true;
        mode_ = Mode::String;
        return true;
      }
      if (c == '}' && mode_ == Mode::ObjFirst) return close();
      return space(c);
    case Mode::Colon:
      if (c == ':') {
        mode_ = Mode::Value;
        return true;
      }
      return space(c);
    case Mode::After:
      if (c == ',') {
        mode_ = stack_.back() == '{' ? Mode::Key : Mode::Value;
        return true;
      }
      if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) return close();
      return space(c);
    case Mode::String:
      if (c == '"') {
        if (key_) {
          mode_ = Mode::Colon;
          return true;
        }
        mode_ = Mode::After;
        return !stack_.empty();
      }
      if (c == '\\') {
        mode_ = Mode::Escape;
        return true;
      }
      return c >= 0x20;  // control characters must be escaped
    case Mode::Escape:
      if (c == 'u') {
        hex_ = 4;
        mode_ = Mode::Hex;
        return true;
      }
      mode_ = Mode::String;
      return std::strchr("\"\\/bfnrt", c) != nullptr && c != 0;
    case Mode::Hex:
      if (!is_hex(c)) return false;
      if (--hex_ == 0) mode_ = Mode::String;
      return true;
    case Mode::Number: return number(c);
    case Mode::Literal:
      if (lit_[lit_at_] == static_cast<char>(c)) {
        if (lit_[++lit_at_] == '\0') mode_ = Mode::After;
        return true;
      }
      return false;
    case Mode::Done: return false;
  }
  return false;
}

bool JsonPrefix::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (!feed(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

JsonConstraint::JsonConstraint(const Tokenizer& tok)
    : tok_(tok), bytes_(tok.n_vocab()), eog_(tok.n_vocab(), 0) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    eog_[id] = tok.is_eog(id) ? 1 : 0;
    if (tok.token_type(id) == TokenType::Normal || tok.token_type(id) == TokenType::Byte) {
      bytes_[id] = tok.token_to_bytes(id);
    }
  }
}

void JsonConstraint::mask(float* logits, int n_vocab) const {
  constexpr float kOff = -std::numeric_limits<float>::infinity();
  const bool done = state_.complete();
  JsonPrefix next;  // copy-assigned per token: its stack keeps its capacity, no allocation
  for (int32_t id = 0; id < n_vocab; ++id) {
    bool ok = false;
    if (id < static_cast<int32_t>(eog_.size()) && eog_[id]) {
      ok = done;
    } else if (!done && id < static_cast<int32_t>(bytes_.size()) && !bytes_[id].empty()) {
      next = state_;
      ok = next.feed(bytes_[id]);
    }
    if (!ok) logits[id] = kOff;
  }
}

void JsonConstraint::accept(int32_t id) {
  if (id >= 0 && id < static_cast<int32_t>(bytes_.size()) && !eog_[id]) {
    state_.feed(bytes_[id]);
  }
}

}  // namespace fasa
