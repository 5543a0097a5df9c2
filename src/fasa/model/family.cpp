#include "fasa/model/family.h"

#include "fasa/io/gguf.h"
#include "fasa/model/config.h"

namespace fasa {

std::string model_family(const GgufFile& f, const ModelConfig& c) {
  const std::string pre = f.get_string_or("tokenizer.ggml.pre", "");
  const std::string tok = f.get_string_or("tokenizer.ggml.model", "");
  if (c.arch == "llama") {
    if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") return "Llama 3.x";
    if (pre == "smollm") return "SmolLM2";
    if (tok == "llama" && c.n_vocab == 32768) return "Mistral (v0.3 vocabulary)";
    if (tok == "llama") return "Llama 2 / Mistral (SentencePiece)";
    return "llama (other)";
  }
  if (c.arch == "qwen2") {
    if (pre == "deepseek-r1-qwen") return "DeepSeek-R1-Distill-Qwen";
    return "Qwen 2 / 2.5";
  }
  if (c.arch == "qwen3") return "Qwen 3";
  if (c.arch == "phi3") return "Phi-3";
  if (c.arch == "gemma3") return "Gemma 3";
  return c.arch;
}

}  // namespace fasa
