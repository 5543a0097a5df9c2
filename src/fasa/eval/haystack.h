// Real-text context for generated tasks: a haystack of words from a book, with short texts
// (needles) planted at chosen depths, sized so a prompt fits a token budget exactly as the
// model's tokenizer counts it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fasa {

// A deterministic 64-bit generator (splitmix64) with the few draws the generators need; its
// output is the same on every platform (std distributions are not).
class TaskRng {
 public:
  explicit TaskRng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  uint64_t below(uint64_t n);  // uniform-ish in [0, n), n >= 1
  double unit();               // [0, 1)
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

struct Needle {
  double depth = 0.0;  // [0, 1]: where in the context (0 = start, 1 = end)
  std::string text;    // planted between sentences
};

class Haystack {
 public:
  // Splits `text` into words (any white space); throws fasa::Error naming `source` when it has
  // fewer than 200 words.
  Haystack(const std::string& text, const std::string& source);
  size_t n_words() const { return words_.size(); }
  const std::vector<std::string>& words() const { return words_; }
  // The first word of the sentence that follows word i (wrapping), or i when no sentence ends
  // within 200 words.
  size_t next_sentence_start(size_t i) const;
  // `n` words from word `start` (wrapping around the end), with every needle planted after the
  // sentence end nearest its depth (needles in depth order).
  std::string context(size_t start, size_t n, const std::vector<Needle>& needles) const;

 private:
  std::vector<std::string> words_;
};

// The largest n in [0, max_n] with count(n) <= target, for a count that grows with n; throws
// fasa::Error (with `what`) when even count(0) is over target.
int64_t fit_units(const std::function<int64_t(int64_t)>& count, int64_t target, int64_t max_n,
                  const std::string& what);

}  // namespace fasa
