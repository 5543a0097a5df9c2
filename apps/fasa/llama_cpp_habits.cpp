#include "llama_cpp_habits.h"

#include <cstdio>

namespace fasa::cli {
namespace {

void note_ignored(const std::string& flag, const std::string& why) {
  std::fprintf(stderr, "fasa: note: %s ignored: %s\n", flag.c_str(), why.c_str());
}

void add_to(CLI::App* cmd) {
  if (cmd->get_option_no_throw("--model") != nullptr) {
    const std::string cpu = "fasa runs on the CPU (no GPU offload)";
    cmd->add_option_function<std::string>(
           "--n-gpu-layers,--gpu-layers",
           [cpu](const std::string& v) { note_ignored("--n-gpu-layers " + v, cpu); },
           "accepted for llama.cpp habits (also -ngl N) and ignored: fasa runs on the CPU")
        ->group("llama.cpp compatibility");
    cmd->add_option_function<std::string>(
           "--main-gpu,--split-mode",
           [cpu](const std::string& v) { note_ignored("a GPU option (" + v + ")", cpu); },
           "accepted for llama.cpp habits and ignored")
        ->group("llama.cpp compatibility");
  }
  for (CLI::App* s : cmd->get_subcommands([](CLI::App*) { return true; })) add_to(s);
}

}  // namespace

std::vector<std::string> llama_cpp_spellings(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& a : args) {
    if (a == "-ngl") a = "--n-gpu-layers";
    if (a.rfind("-ngl=", 0) == 0) a = "--n-gpu-layers=" + a.substr(5);
  }
  return args;
}

void add_gpu_layer_notes(CLI::App& app) { add_to(&app); }

}  // namespace fasa::cli
