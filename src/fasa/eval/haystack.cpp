#include "fasa/eval/haystack.h"

#include <algorithm>
#include <sstream>

#include "fasa/core/error.h"

namespace fasa {

uint64_t TaskRng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t TaskRng::below(uint64_t n) { return n <= 1 ? 0 : next() % n; }

double TaskRng::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

Haystack::Haystack(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) words_.push_back(w);
  if (words_.size() < 200) {
    fail("haystack '{}' has {} words; at least 200 are needed", source, words_.size());
  }
}

namespace {

bool ends_sentence(const std::string& w) {
  size_t i = w.size();
  while (i > 0 && (w[i - 1] == '"' || w[i - 1] == '\'' || w[i - 1] == ')')) --i;
  return i > 0 && (w[i - 1] == '.' || w[i - 1] == '!' || w[i - 1] == '?');
}

}  // namespace

size_t Haystack::next_sentence_start(size_t i) const {
  for (size_t d = 0; d < 200; ++d) {
    if (ends_sentence(words_[(i + d) % words_.size()])) return (i + d + 1) % words_.size();
  }
  return i;
}

std::string Haystack::context(size_t start, size_t n, const std::vector<Needle>& needles) const {
  // Insertion points (word counts before each needle), moved to the nearest sentence end
  // within 80 words when there is one.
  std::vector<size_t> at(needles.size());
  auto word = [&](size_t i) -> const std::string& { return words_[(start + i) % words_.size()]; };
  for (size_t k = 0; k < needles.size(); ++k) {
    const size_t want = static_cast<size_t>(std::clamp(needles[k].depth, 0.0, 1.0) * n);
    size_t best = want;
    for (size_t d = 0; d <= 80; ++d) {
      if (want >= d && want - d > 0 && ends_sentence(word(want - d - 1))) {
        best = want - d;
        break;
      }
      if (want + d < n && ends_sentence(word(want + d))) {
        best = want + d + 1;
        break;
      }
    }
    at[k] = (want == 0 || n == 0) ? 0 : std::min(best, n);
  }
  std::vector<size_t> order(needles.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  std::string out;
  size_t next = 0;
  auto append = [&](const std::string& s) {
    if (!out.empty()) out += ' ';
    out += s;
  };
  for (size_t i = 0; i <= n; ++i) {
    while (next < order.size() && at[order[next]] == i) append(needles[order[next++]].text);
    if (i < n) append(word(i));
  }
  return out;
}

int64_t fit_units(const std::function<int64_t(int64_t)>& count, int64_t target, int64_t max_n,
                  const std::string& what) {
  if (count(0) > target) {
    fail("{}: even without any filler the prompt has {} tokens, over the {} available", what,
         count(0), target);
  }
  int64_t lo = 0, hi = 1;  // count(lo) <= target
  while (hi <= max_n && count(hi) <= target) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, max_n + 1);  // count(hi) > target, or hi is past max_n
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (count(mid) <= target ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace fasa
