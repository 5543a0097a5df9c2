// The model family a file belongs to (what a user would call it), from its architecture and
// tokenizer metadata: "Llama 3.x", "Mistral", "Qwen 2.5", "DeepSeek-R1-Distill-Qwen", ...
#pragma once

#include <string>

namespace fasa {

class GgufFile;
struct ModelConfig;

std::string model_family(const GgufFile& f, const ModelConfig& c);

}  // namespace fasa
