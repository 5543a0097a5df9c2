// Flags a llama.cpp user types by habit: the spellings CLI11 cannot declare (single-dash words
// such as -ngl, -fa, -ctk, -cnv), `run -i`/`run -cnv` as `fasa chat`, and the GPU-only flags,
// accepted with a one-line note (fasa runs on the CPU).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fasa::cli {

// argv as strings with llama.cpp's spellings turned into this CLI's:
//   -ngl N -> --n-gpu-layers N, -sm -> --split-mode, -mg -> --main-gpu, -ts -> --tensor-split,
//   -nkvo -> --no-kv-offload, -fa [on|off|auto] -> --flash-attn=VALUE (all accepted and ignored
//   with a note), -ctk T / -ctv T -> --kv-type T (one type for K and V), -sys -> --system;
//   `run -i|--interactive|-cnv|--conversation` -> `chat`, where run's -s is --seed and -p is the
//   system prompt (llama.cpp's conversation mode); `run -no-cnv` drops the flag.
// Throws fasa::Error for a habit fasa does not serve, saying what to use instead (-hf REPO:
// fasa pull NAME or -m FILE; -ctk and -ctv of different types; -f with run -i).
std::vector<std::string> llama_cpp_spellings(int argc, const char* const* argv);

// Gives every command that loads a model (has `--model`) `-ngl/--n-gpu-layers/--gpu-layers N`,
// `--main-gpu`, `--split-mode`, `--tensor-split`, `--no-kv-offload` and `--flash-attn`:
// accepted, and a note on stderr says they are ignored. Call after every command is added.
void add_gpu_layer_notes(CLI::App& app);

}  // namespace fasa::cli
