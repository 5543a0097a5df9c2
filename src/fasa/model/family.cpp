#include "fasa/model/family.h"

#include "fasa/io/gguf.h"
#include "fasa/model/arch.h"
#include "fasa/model/config.h"

namespace fasa {

namespace {

// Families an architecture's tokenizer.ggml.pre names more precisely than the row's family.
struct PreFamily {
  Arch arch;
  const char* pre;
  const char* family;
};
constexpr PreFamily kByPre[] = {
    {Arch::Llama, "llama-bpe", "Llama 3.x"},
    {Arch::Llama, "llama3", "Llama 3.x"},
    {Arch::Llama, "llama-v3", "Llama 3.x"},
    {Arch::Llama, "smollm", "SmolLM2"},
    {Arch::Qwen2, "deepseek-r1-qwen", "DeepSeek-R1-Distill-Qwen"},
};

}  // namespace

std::string model_family(const GgufFile& f, const ModelConfig& c) {
  const std::string pre = f.get_string_or("tokenizer.ggml.pre", "");
  for (const PreFamily& p : kByPre) {
    if (p.arch == c.arch_id && pre == p.pre) return p.family;
  }
  // llama files with a SentencePiece vocabulary: Llama 2 and Mistral, told apart by its size.
  if (c.arch_id == Arch::Llama && f.get_string_or("tokenizer.ggml.model", "") == "llama") {
    return c.n_vocab == 32768 ? "Mistral (v0.3 vocabulary)" : "Llama 2 / Mistral (SentencePiece)";
  }
  return arch_info(c.arch_id).family;
}

}  // namespace fasa
