// Special-token splitting, end-of-generation texts and token quoting shared by the tokenizers.
#include "fasa/tokenizer/special_tokens.h"

#include <algorithm>
#include <cctype>

#include "fasa/core/error.h"

namespace fasa {

namespace {

// Texts that end a turn or a generation: llama.cpp's list of EOG token texts (as of
// llama-cpp-python 0.3.36), plus its FIM pad/repo/file-separator tokens, which it also treats as
// EOG. "</s>" is on it although Gemma's vocabulary has it as an HTML strikethrough tag.
// llama.cpp's two exceptions (no "<|end|>" next to gpt-oss's "<|return|>" and "<|call|>"; no
// "</s>" next to Gemma 4's "<|tool_response>") are not reproduced.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xef\xbd\x9c"  // NOLINT(bugprone-suspicious-missing-comma): split to end the \x escapes
    "end\xe2\x96\x81"
    "of\xe2\x96\x81"
    "sentence\xef\xbd\x9c>",  // DeepSeek
    "[e~[",
    "<|fim_pad|>",
    "<fim-pad>",
    "<fim_pad>",
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<reponame>",
    "<|file_sep|>",
};

// llama.cpp's fill-in-the-middle prefix, suffix and middle texts (Qwen, Granite, DeepSeek,
// CodeLlama, GLM-4.5, Falcon-H1), which it forces to Control; pad/repo/file-separator are EOG
// texts above.
constexpr std::string_view kFimTexts[] = {
    "<|fim_prefix|>",
    "<fim-prefix>",
    "<fim_prefix>",
    "<PRE>",
    "\xe2\x96\x81<PRE>",
    "<|code_prefix|>",
    "<|prefix|>",
    "<\xef\xbd\x9c"  // NOLINT(bugprone-suspicious-missing-comma): split to end the \x escapes
    "fim\xe2\x96\x81"
    "begin\xef\xbd\x9c>",  // <｜fim▁begin｜>
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<SUF>",
    "\xe2\x96\x81<SUF>",
    "<|code_suffix|>",
    "<|suffix|>",
    "<\xef\xbd\x9c"
    "fim\xe2\x96\x81"
    "hole\xef\xbd\x9c>",  // <｜fim▁hole｜>
    "<|fim_middle|>",
    "<fim-middle>",
    "<fim_middle>",
    "<MID>",
    "\xe2\x96\x81<MID>",
    "<|code_middle|>",
    "<|middle|>",
    "<\xef\xbd\x9c"
    "fim\xe2\x96\x81"
    "end\xef\xbd\x9c>",  // <｜fim▁end｜>
};

// True when [begin, end) overlaps one of the ascending, disjoint `ranges`.
bool overlaps(const std::vector<TextRange>& ranges, size_t begin, size_t end) {
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), begin,
                                   [](const TextRange& r, size_t pos) { return r.end <= pos; });
  return it != ranges.end() && it->begin < end;
}

// C's isspace in the "C" locale, which llama.cpp's strip uses.
bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

bool phi3_strips_specials(const std::string& model_name) {
  std::string lower = model_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
}

SpecialTokenSplitter::SpecialTokenSplitter(const std::vector<std::string>& texts,
                                           const std::vector<TokenType>& types,
                                           const std::string& model_name) {
  FASA_CHECK(texts.size() == types.size());
  const bool phi3 = phi3_strips_specials(model_name);
  for (size_t i = 0; i < texts.size(); ++i) {
    const TokenType t = types[i];
    if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) {
      const std::string& s = texts[i];
      const bool rstrip = phi3 && s != "<unk>" && s != "<s>" && s != "<|endoftext|>";
      specials_.push_back({static_cast<int32_t>(i), s, t == TokenType::UserDefined, rstrip});
    }
  }
  std::stable_sort(specials_.begin(), specials_.end(), [](const Special& a, const Special& b) {
    return a.text.size() > b.text.size();
  });
}

std::vector<TextFragment> SpecialTokenSplitter::split(std::string_view text,
                                                      const SplitRule& rule) const {
  std::vector<TextFragment> frags{{-1, 0, text.size()}};
  std::vector<TextFragment> next;
  const bool any_literal = rule.literal != nullptr && !rule.literal->empty();
  for (const Special& sp : specials_) {
    const std::string& s = sp.text;
    const bool marker =
        rule.markers != nullptr &&
        std::find(rule.markers->begin(), rule.markers->end(), s) != rule.markers->end();
    const bool outside = rule.parse_special || sp.user_defined;  // cut outside literal ranges
    const bool inside = sp.user_defined && !marker;              // cut inside them
    if (s.empty() || (!outside && !inside)) continue;
    const auto cut = [&](size_t m) {
      if (!any_literal) return outside;
      return overlaps(*rule.literal, m, m + s.size()) ? inside : outside;
    };
    next.clear();
    for (const TextFragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      const std::string_view area = text.substr(0, f.end);
      size_t pos = f.begin;   // the start of the text not yet emitted
      size_t from = f.begin;  // where the next search starts
      for (size_t m; (m = area.find(s, from)) != std::string_view::npos;) {
        if (!cut(m)) {  // stays text; a later, overlapping occurrence may still be cut
          from = m + 1;
          continue;
        }
        if (m > pos) next.push_back({-1, pos, m});
        next.push_back({sp.id, m, m + s.size()});
        pos = m + s.size();
        while (sp.rstrip && pos < f.end && is_c_space(text[pos])) ++pos;
        from = pos;
      }
      if (pos < f.end) next.push_back({-1, pos, f.end});
    }
    frags.swap(next);
  }
  return frags;
}

bool is_eog_text(std::string_view text) {
  return std::find(std::begin(kEogTexts), std::end(kEogTexts), text) != std::end(kEogTexts);
}

bool is_forced_control_text(std::string_view text) {
  return is_eog_text(text) ||
         std::find(std::begin(kFimTexts), std::end(kFimTexts), text) != std::end(kFimTexts);
}

std::string quoted_token(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 64) out += "...";
  return out + "'";
}

std::vector<int32_t> encode_fragments(std::string_view text, int32_t bos,
                                      const SpecialTokenSplitter& specials, const SplitRule& rule,
                                      const FragmentEncoder& encode_text) {
  const int64_t bad = find_invalid_utf8(text);
  if (bad >= 0) fail("prompt is not valid UTF-8 (byte offset {})", bad);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (bos >= 0) out.push_back(bos);
  if (text.empty()) return out;
  bool after_special = true;  // the text start counts as following a special token
  for (const TextFragment& f : specials.split(text, rule)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    encode_text(text.substr(f.begin, f.end - f.begin), after_special, out);
    after_special = false;
  }
  return out;
}

}  // namespace fasa
