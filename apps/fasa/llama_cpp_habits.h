// Flags a llama.cpp user types by habit: the spellings CLI11 cannot declare, and the GPU-only
// flags, accepted with a one-line note (fasa runs on the CPU).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fasa::cli {

// argv as strings, llama.cpp's single-dash long flags renamed to this CLI's long ones
// (`-ngl N` -> `--n-gpu-layers N`); everything else unchanged.
std::vector<std::string> llama_cpp_spellings(int argc, const char* const* argv);

// Gives every command that loads a model (has `--model`) `-ngl/--n-gpu-layers/--gpu-layers N`,
// `--main-gpu` and `--split-mode`: accepted, and a note on stderr says they are
// ignored. Call after every command is added.
void add_gpu_layer_notes(CLI::App& app);

}  // namespace fasa::cli
