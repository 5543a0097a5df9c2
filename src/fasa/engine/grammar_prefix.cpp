#include "fasa/engine/grammar_prefix.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace fasa {

namespace {

using Kind = GrammarNode::Kind;

bool is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int byte_at(const std::string& text, int b) {
  return static_cast<int>(text.size()) > b ? static_cast<unsigned char>(text[b]) : -1;
}

// The part of [a, e) whose text has byte `c` at position `b`: the texts (text(i)) are sorted and
// share their first b bytes, so it is one run. Binary search: an enum may be long.
template <typename Text>
std::pair<int, int> narrow(int a, int e, int b, unsigned char c, const Text& text) {
  auto first_not = [](int lo, int hi, const auto& below) {
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (below(mid)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  };
  const int lo = first_not(a, e, [&](int i) { return byte_at(text(i), b) < c; });
  const int hi = first_not(lo, e, [&](int i) { return byte_at(text(i), b) <= c; });
  return {lo, hi};
}

}  // namespace

GrammarPrefix::GrammarPrefix(const Grammar& g) : g_(&g) {
  Parse p;
  p.stack.push_back(Frame{g.root, kValue});
  parses_.push_back(std::move(p));
  n_ = 1;
}

int GrammarPrefix::add(const Parse& p) {
  if (n_ < static_cast<int>(parses_.size())) {
    Parse& q = parses_[n_];
    q.stack.assign(p.stack.begin(), p.stack.end());  // keeps q's capacity
    q.spaces = p.spaces;
    q.dead = false;
  } else {
    parses_.push_back(p);
  }
  return n_++;
}

bool GrammarPrefix::feed_into(unsigned char c, GrammarPrefix* next) const {
  next->g_ = g_;
  next->n_ = 0;
  for (int i = 0; i < n_; ++i) next->advance(next->add(parses_[i]), c);
  next->settle();
  return next->n_ > 0;
}

bool GrammarPrefix::feed(unsigned char c) {
  GrammarPrefix next(*g_);
  if (!feed_into(c, &next)) return false;
  *this = std::move(next);
  return true;
}

bool GrammarPrefix::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (!feed(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Whole: nothing left open, but a value that can still grow (accepting) on top and Sequences
// whose last part that is below it.
bool GrammarPrefix::complete() const {
  for (int i = 0; i < n_; ++i) {
    const std::vector<Frame>& st = parses_[i].stack;
    size_t open = st.size();
    if (open > 0 && accepting(st.back())) --open;
    while (open > 0 && seq_done(st[open - 1])) --open;
    if (open == 0) return true;
  }
  return false;
}

bool GrammarPrefix::seq_done(const Frame& f) const {
  return f.stage == kSeq && f.a + 1 == static_cast<int>(g_->nodes[f.node].parts.size());
}

bool GrammarPrefix::accepting(const Frame& f) const {
  if (f.stage == kNum) return f.sub == kZero || f.sub == kInt || f.sub == kFrac || f.sub == kExp;
  if (f.stage == kLit) return static_cast<int>(g_->nodes[f.node].texts[f.a].size()) == f.b;
  return false;
}

bool GrammarPrefix::same(const Parse& p, const Parse& q) {
  auto frame_eq = [](const Frame& f, const Frame& g) {
    return f.node == g.node && f.stage == g.stage && f.sub == g.sub && f.a == g.a && f.b == g.b &&
           f.e == g.e;
  };
  return p.spaces == q.spaces &&
         std::equal(p.stack.begin(), p.stack.end(), q.stack.begin(), q.stack.end(), frame_eq);
}

void GrammarPrefix::settle() {
  int kept = 0;
  for (int i = 0; i < n_; ++i) {
    if (parses_[i].dead || kept >= kMaxParses) continue;
    bool seen = false;
    for (int j = 0; j < kept && !seen; ++j) seen = same(parses_[j], parses_[i]);
    if (seen) continue;
    if (kept != i) std::swap(parses_[kept], parses_[i]);  // swaps buffers: both keep capacity
    ++kept;
  }
  n_ = kept;
}

void GrammarPrefix::advance(int k, unsigned char c) {
  const int spaces = parses_[k].spaces;
  const Step s = step(k, c);  // may add parses: index, never hold a reference across it
  parses_[k].dead = s == Step::Dead;
  parses_[k].spaces = s == Step::Space ? spaces + 1 : 0;
}

bool GrammarPrefix::space(int k, unsigned char c) const {
  return g_->json && is_space(c) && parses_[k].spaces < kMaxSpaces;
}

GrammarPrefix::Step GrammarPrefix::step(int k, unsigned char c) {
  if (parses_[k].stack.empty()) return Step::Dead;  // the value is whole: nothing follows
  switch (parses_[k].stack.back().stage) {
    case kValue: {
      const bool raw = g_->nodes[parses_[k].stack.back().node].raw;
      return !raw && space(k, c) ? Step::Space : start(k, c);
    }
    case kObjOpen:
    case kObjKey:
    case kObjColon:
    case kObjAfter: return object(k, c);
    case kKey: return key(k, c);
    case kArrOpen:
    case kArrNext:
    case kArrAfter: return array(k, c);
    case kStr:
    case kEsc:
    case kHex: return string(k, c);
    case kNum: return number(k, c);
    case kLit: return literal(k, c);
    case kSeq: return sequence(k, c);
  }
  return Step::Dead;
}

GrammarPrefix::Step GrammarPrefix::end_then(int k, unsigned char c) {
  parses_[k].stack.pop_back();
  return step(k, c);
}

// The value of the top frame's node begins with `c` (not whitespace).
GrammarPrefix::Step GrammarPrefix::start(int k, unsigned char c) {
  const int node = parses_[k].stack.back().node;
  const GrammarNode& n = g_->nodes[node];
  const bool room = static_cast<int>(parses_[k].stack.size()) <= kMaxNesting;
  switch (n.kind) {
    case Kind::AnyOf: {
      int first = -1;
      for (int alt : n.alts) {
        if (!g_->finite[alt]) continue;  // no value of it ends: never start one
        if (first < 0) {
          first = alt;
          continue;
        }
        const int f = add(parses_[k]);
        parses_[f].stack.back() = Frame{alt, kValue};
        advance(f, c);
      }
      if (first < 0) return Step::Dead;
      parses_[k].stack.back() = Frame{first, kValue};
      return start(k, c);
    }
    case Kind::Object:
      if (c != '{' || !room) return Step::Dead;
      parses_[k].stack.back() = Frame{node, kObjOpen};
      return Step::Byte;
    case Kind::Array:
      if (c != '[' || !room) return Step::Dead;
      parses_[k].stack.back() = Frame{node, kArrOpen};
      return Step::Byte;
    case Kind::String:
      if (c != '"') return Step::Dead;
      parses_[k].stack.back() = Frame{node, kStr};
      return Step::Byte;
    case Kind::Number:
    case Kind::Integer:
      if (c == '-') {
        parses_[k].stack.back() = Frame{node, kNum, kMinus};
      } else if (is_digit(c)) {
        parses_[k].stack.back() = Frame{node, kNum, c == '0' ? kZero : kInt, 1};
      } else {
        return Step::Dead;
      }
      return Step::Byte;
    case Kind::Literal:
      parses_[k].stack.back() = Frame{node, kLit, 0, 0, 0, static_cast<int32_t>(n.texts.size())};
      return literal(k, c);
    case Kind::Sequence:
      if (n.parts.empty() || !room) return Step::Dead;
      parses_[k].stack.back() = Frame{node, kSeq};  // part 0 under way
      parses_[k].stack.push_back(Frame{n.parts[0], kValue});
      return start(k, c);
  }
  return Step::Dead;
}

bool GrammarPrefix::can_close(const GrammarNode& n, int next) const {
  return n.props.empty() || n.first_required[next] == static_cast<int>(n.props.size());
}

// Some key of key_order[lo, hi) may come after property `next`: properties keep the schema's
// order, and none that is required may be skipped.
bool GrammarPrefix::has_key(const GrammarNode& n, int next, int lo, int hi) const {
  if (n.props.empty()) return n.extra >= 0 && g_->finite[n.extra];
  const int last = std::min(n.first_required[next], static_cast<int>(n.props.size()) - 1);
  for (int i = lo; i < hi; ++i) {
    const int j = n.key_order[i];
    if (j >= next && j <= last && g_->finite[n.props[j].node]) return true;
  }
  return false;
}

GrammarPrefix::Step GrammarPrefix::object(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  const GrammarNode& n = g_->nodes[f.node];
  if (space(k, c)) return Step::Space;
  switch (f.stage) {
    case kObjOpen:
    case kObjKey:
      if (c == '"') return key_start(k);
      if (c == '}' && f.stage == kObjOpen && can_close(n, 0)) {
        parses_[k].stack.pop_back();
        return Step::Byte;
      }
      return Step::Dead;
    case kObjColon: {
      if (c != ':') return Step::Dead;
      f.stage = kObjAfter;
      const int value = n.props.empty() ? n.extra : n.props[f.a - 1].node;
      parses_[k].stack.push_back(Frame{value, kValue});
      return Step::Byte;
    }
    default:  // kObjAfter
      if (c == ',' && has_key(n, f.a, 0, static_cast<int>(n.props.size()))) {
        f.stage = kObjKey;
        return Step::Byte;
      }
      if (c == '}' && can_close(n, f.a)) {
        parses_[k].stack.pop_back();
        return Step::Byte;
      }
      return Step::Dead;
  }
}

// The opening quote of a key: a listed key (kKey), or any string where the object lists none.
GrammarPrefix::Step GrammarPrefix::key_start(int k) {
  Frame& f = parses_[k].stack.back();
  const GrammarNode& n = g_->nodes[f.node];
  const int count = static_cast<int>(n.props.size());
  if (!has_key(n, f.a, 0, count)) return Step::Dead;
  f.stage = kObjColon;
  const Frame inner = n.props.empty() ? Frame{f.node, kStr} : Frame{f.node, kKey, 0, 0, 1, count};
  parses_[k].stack.push_back(inner);
  return Step::Byte;
}

GrammarPrefix::Step GrammarPrefix::key(int k, unsigned char c) {
  std::vector<Frame>& st = parses_[k].stack;
  Frame& f = st.back();
  const GrammarNode& n = g_->nodes[f.node];
  auto text = [&](int i) -> const std::string& { return n.props[n.key_order[i]].key; };
  const auto [lo, hi] = narrow(f.a, f.e, f.b, c, text);
  const int next = st[st.size() - 2].a;  // the object's next property
  if (lo >= hi || !has_key(n, next, lo, hi)) return Step::Dead;
  f.a = lo;
  f.e = hi;
  f.b += 1;
  if (hi - lo == 1 && static_cast<int>(text(lo).size()) == f.b) {  // its closing quote
    const int j = n.key_order[lo];
    st.pop_back();
    st.back().a = j + 1;  // the object frame, waiting for ':'
  }
  return Step::Byte;
}

GrammarPrefix::Step GrammarPrefix::array(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  const GrammarNode& n = g_->nodes[f.node];
  if (space(k, c)) return Step::Space;
  const bool more = g_->finite[n.items] && (n.max_items < 0 || f.a < n.max_items);
  switch (f.stage) {
    case kArrOpen:
      if (c == ']' && n.min_items == 0) {
        parses_[k].stack.pop_back();
        return Step::Byte;
      }
      return more ? element(k, c) : Step::Dead;
    case kArrNext: return element(k, c);
    default:  // kArrAfter
      if (c == ',' && more) {
        f.stage = kArrNext;
        return Step::Byte;
      }
      if (c == ']' && f.a >= n.min_items) {
        parses_[k].stack.pop_back();
        return Step::Byte;
      }
      return Step::Dead;
  }
}

GrammarPrefix::Step GrammarPrefix::element(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  f.a += 1;
  f.stage = kArrAfter;
  const int items = g_->nodes[f.node].items;
  parses_[k].stack.push_back(Frame{items, kValue});
  return start(k, c);
}

GrammarPrefix::Step GrammarPrefix::string(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  switch (f.stage) {
    case kStr:
      if (f.sub > 0) {  // inside a UTF-8 character
        if ((c & 0xC0) != 0x80) return Step::Dead;
        f.sub -= 1;
        return Step::Byte;
      }
      if (c == '"') {
        parses_[k].stack.pop_back();
        return Step::Byte;
      }
      if (c == '\\') {
        f.stage = kEsc;
        return Step::Byte;
      }
      if (c < 0x20) return Step::Dead;  // control characters must be escaped
      if (c < 0x80) return Step::Byte;
      if (c >= 0xC2 && c <= 0xDF) {
        f.sub = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        f.sub = 2;
      } else if (c >= 0xF0 && c <= 0xF4) {
        f.sub = 3;
      } else {
        return Step::Dead;
      }
      return Step::Byte;
    case kEsc:
      if (c == 'u') {
        f.stage = kHex;
        f.sub = 4;
        return Step::Byte;
      }
      if (c == 0 || std::strchr("\"\\/bfnrt", c) == nullptr) return Step::Dead;
      f.stage = kStr;
      return Step::Byte;
    default:  // kHex; no surrogate (\uD800-\uDFFF): other characters can be written as UTF-8
      if (!is_hex(c)) return Step::Dead;
      if (f.sub == 4) f.a = c == 'd' || c == 'D';
      if (f.sub == 3 && f.a && c >= '8') return Step::Dead;
      if (--f.sub == 0) {
        f.stage = kStr;
        f.a = 0;
      }
      return Step::Byte;
  }
}

GrammarPrefix::Step GrammarPrefix::number(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  const bool integer = g_->nodes[f.node].kind == Kind::Integer;
  const bool digit = is_digit(c);
  const bool exp = !integer && (c == 'e' || c == 'E');
  switch (f.sub) {
    case kMinus:
      if (!digit) return Step::Dead;
      f.sub = c == '0' ? kZero : kInt;
      f.a = 1;
      return Step::Byte;
    case kZero:
    case kInt:
      if (digit && f.sub == kInt && f.a < kMaxIntDigits) {
        f.a += 1;
        return Step::Byte;
      }
      if (c == '.' && !integer) {
        f.sub = kDot;
        return Step::Byte;
      }
      if (exp) {
        f.sub = kE;
        return Step::Byte;
      }
      return end_then(k, c);
    case kDot:
      if (!digit) return Step::Dead;
      f.sub = kFrac;
      f.a = 1;
      return Step::Byte;
    case kFrac:
      if (digit && f.a < kMaxFracDigits) {
        f.a += 1;
        return Step::Byte;
      }
      if (exp) {
        f.sub = kE;
        return Step::Byte;
      }
      return end_then(k, c);
    case kE:
      if (c == '+' || c == '-') {
        f.sub = kESign;
        return Step::Byte;
      }
      [[fallthrough]];
    case kESign:
      if (!digit) return Step::Dead;
      f.sub = kExp;
      f.a = 1;
      return Step::Byte;
    default:  // kExp
      if (digit && f.a < kMaxExpDigits) {
        f.a += 1;
        return Step::Byte;
      }
      return end_then(k, c);
  }
}

GrammarPrefix::Step GrammarPrefix::literal(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  const std::vector<std::string>& texts = g_->nodes[f.node].texts;
  auto text = [&](int i) -> const std::string& { return texts[i]; };
  const auto [lo, hi] = narrow(f.a, f.e, f.b, c, text);
  if (lo < hi) {
    f.a = lo;
    f.e = hi;
    f.b += 1;
    if (hi - lo == 1 && static_cast<int>(texts[lo].size()) == f.b) parses_[k].stack.pop_back();
    return Step::Byte;
  }
  // A text that is whole but a prefix of others (1 in [1, 12]) ends here when c continues none.
  if (static_cast<int>(texts[f.a].size()) == f.b) return end_then(k, c);
  return Step::Dead;
}

// The byte after part `a` of a Sequence ended: the next part starts with it, or, after the last
// part, what follows the Sequence does.
GrammarPrefix::Step GrammarPrefix::sequence(int k, unsigned char c) {
  Frame& f = parses_[k].stack.back();
  const GrammarNode& n = g_->nodes[f.node];
  if (f.a + 1 >= static_cast<int>(n.parts.size())) return end_then(k, c);
  f.a += 1;
  const int next = n.parts[f.a];
  parses_[k].stack.push_back(Frame{next, kValue});  // (f is not used past this)
  return step(k, c);
}

}  // namespace fasa
