#include "cli_errors.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fasa::cli {
namespace {

// Optimal string alignment distance (edits and adjacent transpositions), the usual typo measure.
size_t typo_distance(const std::string& a, const std::string& b) {
  // d: [a.size() + 1][b.size() + 1], row-major
  const size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  for (size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t v =
          std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      }
      d[i * w + j] = v;
    }
  }
  return d[a.size() * w + b.size()];
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(s->get_name());
  }
  return names;
}

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& names) {
  const std::string n = nearest(typed, names);
  return n.empty() ? "" : "; did you mean '" + n + "'?";
}

// The first argument the command line does not know, with a suggestion: an unknown subcommand
// where one is expected, else an unknown flag of the command reached. "" when every word is
// known (the error is about values, not names).
std::string unknown_word_hint(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* cur = &app;
  std::string path = "fasa";
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::vector<std::string> subs = subcommand_names(*cur);
    if (a.size() > 1 && a[0] == '-' && !is_number(a)) {
      const std::string name = a.substr(0, a.find('='));
      if (cur->get_option_no_throw(name) == nullptr) {
        const bool word = name.size() > 2 && name[1] != '-';
        return "unknown flag '" + name + "' for '" + path + "'" +
               did_you_mean(name, flag_names(*cur)) + " (" + path + " --help lists them" +
               (word ? "; single-dash flags are one letter, long ones take two dashes" : "") + ")";
      }
      continue;
    }
    if (subs.empty()) continue;  // a value or positional of a leaf command
    if (std::find(subs.begin(), subs.end(), a) == subs.end()) {
      return "unknown command '" + (path == "fasa" ? a : path.substr(5) + " " + a) + "'" +
             did_you_mean(a, subs) + " (" + path + " --help lists them)";
    }
    for (const CLI::App* s : cur->get_subcommands([](const CLI::App*) { return true; })) {
      if (s->get_name() == a) cur = s;
    }
    path += " " + a;
  }
  return "";
}

}  // namespace

std::string single_dash_word_error(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* cur = &app;
  bool value = false;  // args[i] is the value of the flag before it ("-p -la la" is a prompt)
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (value) {
      value = false;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      const bool word = a.size() > 2 && std::isalpha(static_cast<unsigned char>(a[1])) &&
                        std::isalpha(static_cast<unsigned char>(a[2]));
      if (word) {
        const std::vector<std::string> upto(args.begin(),
                                            args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        const std::string msg = unknown_word_hint(app, upto);
        return msg.empty() ? "unknown flag '" + a + "'" : msg;
      }
      const CLI::Option* o = cur->get_option_no_throw(a.substr(0, a.find('=')));
      value = o != nullptr && a.find('=') == std::string::npos && o->get_items_expected_min() > 0;
      continue;
    }
    for (const CLI::App* s : cur->get_subcommands([](const CLI::App*) { return true; })) {
      if (s->get_name() == a) cur = s;
    }
  }
  return "";
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& e,
                       const std::vector<std::string>& args) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  std::string msg = unknown_word_hint(app, args);
  if (msg.empty()) msg = e.what();
  std::fflush(stdout);
  std::fprintf(stderr, "fasa: error: %s\n", msg.c_str());
  return 1;
}

std::string nearest(const std::string& typed, const std::vector<std::string>& candidates) {
  // Dashes are not letters the user mistyped: compare the words.
  auto word = [](const std::string& s) {
    const size_t first = s.find_first_not_of('-');
    return first == std::string::npos ? s : s.substr(first);
  };
  const std::string t = word(typed);
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates) {
    const std::string w = word(c);
    const size_t d = typo_distance(t, w);
    if (d <= std::min(t.size(), w.size()) / 3 && d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace fasa::cli
