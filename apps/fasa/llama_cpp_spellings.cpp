// llama_cpp_spellings (llama_cpp_habits.h): llama.cpp's single-dash words and its interactive
// `run` turned into this CLI's spellings before CLI11 parses them.
#include <algorithm>
#include <map>

#include "fasa/core/error.h"
#include "llama_cpp_habits.h"

namespace fasa::cli {
namespace {

// Single-dash words renamed as they are (their values follow as typed).
const std::map<std::string, std::string>& renames() {
  static const std::map<std::string, std::string> m = {{"-ngl", "--n-gpu-layers"},
                                                       {"-sm", "--split-mode"},
                                                       {"-mg", "--main-gpu"},
                                                       {"-ts", "--tensor-split"},
                                                       {"-nkvo", "--no-kv-offload"},
                                                       {"-sys", "--system"},
                                                       {"--system-prompt", "--system"}};
  return m;
}

bool is_any(const std::string& a, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return a == n; });
}

// "-ngl=99" -> ("-ngl", "=99"); "-ngl" -> ("-ngl", "").
std::pair<std::string, std::string> split_eq(const std::string& a) {
  const size_t eq = a.find('=');
  if (eq == std::string::npos || a.empty() || a[0] != '-') return {a, ""};
  return {a.substr(0, eq), a.substr(eq)};
}

void refuse_downloads(const std::string& a) {
  if (is_any(split_eq(a).first, {"-hf", "-hfr", "--hf-repo", "-hff", "--hf-file", "-hft",
                                 "--hf-token", "-mu", "--model-url", "-hfd", "-hfrd"})) {
    fail(
        "{}: fasa does not download from Hugging Face by repo or URL; use `fasa pull NAME` "
        "(`fasa pull --list` names them) or -m FILE",
        split_eq(a).first);
  }
}

// -ctk T and -ctv T: fasa keeps K and V in one type, --kv-type.
void fold_cache_types(std::vector<std::string>& args) {
  std::string type, first;
  for (size_t i = 1; i < args.size(); ++i) {
    const bool k = is_any(args[i], {"-ctk", "--cache-type-k"});
    if (!k && !is_any(args[i], {"-ctv", "--cache-type-v"})) continue;
    if (i + 1 == args.size()) fail("{} needs a value (a KV cache type: f16, f32 or q8_0)", args[i]);
    const std::string value = args[i + 1];
    if (!type.empty() && value != type) {
      fail("{} {} and {} {} differ: fasa keeps K and V in one type (--kv-type f16, f32 or q8_0)",
           first, type, args[i], value);
    }
    if (type.empty()) {
      type = value;
      first = args[i];
      args[i] = "--kv-type";
    } else {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + i + 2);
      --i;
    }
  }
}

// -fa / --flash-attn, bare or with on|off|auto (as a separate word or after '='): one word.
void fold_flash_attn(std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const auto [name, eq] = split_eq(args[i]);
    if (!is_any(name, {"-fa", "--flash-attn"}) || !eq.empty()) {
      if (name == "-fa") args[i] = "--flash-attn" + eq;
      continue;
    }
    std::string value = "on";
    if (i + 1 < args.size() && is_any(args[i + 1], {"on", "off", "auto", "1", "0"})) {
      value = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    args[i] = "--flash-attn=" + value;
  }
}

// `run -i` / `run -cnv`: `chat`, with run's meanings of -s (seed) and llama.cpp's of -p (the
// system prompt in conversation mode).
void interactive_run_as_chat(std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] != "run") return;
  const auto interactive = [](const std::string& a) {
    return is_any(a,
                  {"-i", "--interactive", "-cnv", "--conversation", "-if", "--interactive-first"});
  };
  args.erase(std::remove_if(args.begin() + 2, args.end(),
                            [](const std::string& a) {
                              return is_any(a, {"-no-cnv", "--no-conversation"});
                            }),
             args.end());
  if (std::none_of(args.begin() + 2, args.end(), interactive)) return;
  std::vector<std::string> out = {args[0], "chat"};
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (interactive(a) || a == "--chat") continue;
    if (is_any(a, {"-f", "--file"})) {
      fail(
          "`fasa run -i` (or -cnv) is `fasa chat`: the conversation comes from standard input; "
          "give a system prompt with -p TEXT (in fasa chat: -s TEXT), not {} FILE",
          a);
    }
    out.push_back(a == "-s" ? "--seed" : is_any(a, {"-p", "--prompt"}) ? "--system" : a);
  }
  args = out;
}

}  // namespace

std::vector<std::string> llama_cpp_spellings(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--") break;
    refuse_downloads(args[i]);
    const auto [name, eq] = split_eq(args[i]);
    if (const auto it = renames().find(name); it != renames().end()) args[i] = it->second + eq;
  }
  fold_cache_types(args);
  fold_flash_attn(args);
  interactive_run_as_chat(args);
  return args;
}

}  // namespace fasa::cli
