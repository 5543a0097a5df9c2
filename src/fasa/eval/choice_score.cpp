#include "fasa/eval/choice_score.h"

#include "fasa/core/error.h"
#include "fasa/engine/generate.h"

namespace fasa {

namespace {

// Tokens per forward of a continuation (the server's prompt scoring uses the same).
constexpr int kChunk = 32;

// Python's str.isspace() for ASCII (what rstrip() removes, short of non-ASCII spaces).
bool ascii_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

}  // namespace

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;  // continuation bytes do not count
  return n;
}

ChoiceTokens choice_tokens(const Tokenizer& tok, const std::string& prompt,
                           const std::vector<std::string>& choices) {
  size_t end = prompt.size();
  while (end > 0 && ascii_space(prompt[end - 1])) --end;
  const std::string context = prompt.substr(0, end), moved = prompt.substr(end);
  ChoiceTokens t;
  t.context = tok.encode(context, true, false);
  if (t.context.empty()) fail("the prompt has no tokens once its trailing white space is moved");
  for (const std::string& c : choices) {
    const std::vector<int32_t> whole = tok.encode(context + moved + c, true, false);
    const size_t skip = std::min(whole.size(), t.context.size());
    t.continuation.emplace_back(whole.begin() + static_cast<std::ptrdiff_t>(skip), whole.end());
  }
  return t;
}

ChoiceScore score_choices(const std::function<std::unique_ptr<Session>()>& make_dense,
                          const ChoiceTokens& t, const std::vector<std::string>& choices) {
  if (choices.size() != t.continuation.size()) {
    fail("score_choices: {} choices for {} continuations", choices.size(), t.continuation.size());
  }
  const auto context = make_dense();
  const std::vector<float> first = context->prefill(t.context);  // [n_vocab]
  const int n_vocab = static_cast<int>(first.size());
  ChoiceScore s;
  for (const std::vector<int32_t>& cont : t.continuation) {
    double sum = 0.0;
    if (!cont.empty()) {
      sum += token_logprob(first.data(), n_vocab, cont[0], 0).logprob;
      const auto session = make_dense();
      session->copy_prefix_from(*context);
      // Row j predicts cont[j + 1]: [n_cont - 1, n_vocab].
      const std::vector<int32_t> fed(cont.begin(), cont.end() - 1);
      const std::vector<float> logits =
          fed.empty() ? std::vector<float>() : session->eval_all(fed, kChunk);
      for (size_t j = 0; j < fed.size(); ++j) {
        sum +=
            token_logprob(logits.data() + j * static_cast<size_t>(n_vocab), n_vocab, cont[j + 1], 0)
                .logprob;
      }
    }
    s.logprob.push_back(sum);
  }
  double best = 0.0, best_norm = 0.0;
  for (size_t c = 0; c < choices.size(); ++c) {
    const double norm = s.logprob[c] / static_cast<double>(utf8_length(choices[c]));
    if (c == 0 || s.logprob[c] > best) {
      best = s.logprob[c];
      s.pred = static_cast<int>(c);
    }
    if (c == 0 || norm > best_norm) {
      best_norm = norm;
      s.pred_norm = static_cast<int>(c);
    }
  }
  return s;
}

}  // namespace fasa
