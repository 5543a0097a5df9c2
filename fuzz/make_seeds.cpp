// Writes the valid seed inputs of fuzz/corpus/<target>/ with the project's own writers
// (GgufWriter, save_calibration, task_to_json_line), so the fuzzers start from files the engine
// accepts. Deterministic: rerun after a format change and commit the result.
//   build-fuzz/fuzz/fasa_fuzz_seeds fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "fasa/attention/calibration.h"
#include "fasa/eval/tasks.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/unicode.h"

namespace fs = std::filesystem;

namespace fasa::fuzz {
namespace {

fs::path g_root;

void write_seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out << bytes;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

std::string bytes_of(const GgufWriter& w) {
  const std::vector<uint8_t> b = w.to_bytes();
  return {b.begin(), b.end()};
}

// --- gguf: model metadata, both tokenizer kinds, chat templates, a few small tensors

void add_llama_keys(GgufWriter& w, const std::string& arch) {
  const std::string a = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "fuzz-seed");
  w.set_u32(a + "block_count", 2);
  w.set_u32(a + "context_length", 256);
  w.set_u32(a + "embedding_length", 32);
  w.set_u32(a + "feed_forward_length", 48);
  w.set_u32(a + "attention.head_count", 4);
  w.set_u32(a + "attention.head_count_kv", 2);
  w.set_f32(a + "rope.freq_base", 10000.0f);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(a + "rope.dimension_count", 8);
}

void add_small_tensors(GgufWriter& w, int n_vocab) {
  std::vector<float> embd(static_cast<size_t>(32) * n_vocab, 0.25f);
  w.add_tensor_f32("token_embd.weight", {32, n_vocab}, embd);
  w.add_tensor_f32("output_norm.weight", {32}, std::vector<float>(32, 1.0f));
  const std::vector<uint16_t> f16(64, 0x3C00);  // 1.0
  w.add_tensor("blk.0.attn_q.weight", DType::F16, {32, 2}, f16.data(), f16.size() * 2);
  std::vector<uint8_t> q8(34, 1);  // one Q8_0 block: f16 scale + 32 int8
  w.add_tensor("blk.0.ffn_gate.weight", DType::Q8_0, {32}, q8.data(), q8.size());
}

void add_bpe_tokenizer(GgufWriter& w) {
  std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  std::vector<int32_t> types = {3, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  const std::vector<std::string> merges = {"h e", "l l", "he ll", "hell o", "\xc4\xa0 w"};
  for (const std::string& m : merges) {
    tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
    types.push_back(1);
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "smollm");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", merges);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string("tokenizer.chat_template",
               "{% for message in messages %}{% if loop.first and messages[0]['role'] != "
               "'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant.<|im_end|>\\n'"
               " }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
               "'<|im_end|>' + '\\n'}}{% endfor %}");
}

void add_spm_tokenizer(GgufWriter& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<start_of_turn>", "<end_of_turn>"};
  std::vector<float> scores(tokens.size(), 0.0f);
  std::vector<int32_t> types = {2, 3, 3, 3, 3};
  char hex[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    tokens.push_back(hex);
    scores.push_back(0.0f);
    types.push_back(6);
  }
  for (const char* piece : {"\xe2\x96\x81", "h", "e", "l", "o", "he", "ll", "hell", "hello"}) {
    tokens.push_back(piece);
    scores.push_back(-static_cast<float>(tokens.size()));
    types.push_back(1);
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_string("tokenizer.chat_template",
               "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}"
               "\n{{ message['content'] }}<end_of_turn>\n{% endfor %}");
}

void gguf_seeds() {
  {
    GgufWriter w;
    add_llama_keys(w, "llama");
    add_bpe_tokenizer(w);
    add_small_tensors(w, 4);
    write_seed("gguf", "llama_bpe.gguf", bytes_of(w));
  }
  {
    GgufWriter w(3, 64);
    add_llama_keys(w, "gemma3");
    w.set_u32("gemma3.attention.sliding_window", 16);
    w.set_u32("gemma3.attention.sliding_window_pattern", 2);
    w.set_f32("gemma3.rope.freq_base_swa", 10000.0f);
    w.set_u32("general.alignment", 64);
    add_spm_tokenizer(w);
    add_small_tensors(w, 4);
    write_seed("gguf", "gemma3_spm.gguf", bytes_of(w));
  }
  {
    GgufWriter w(2);
    add_llama_keys(w, "qwen2");
    w.set_string("qwen2.rope.scaling.type", "linear");
    w.set_f32("qwen2.rope.scaling.factor", 4.0f);
    GgufValue v;  // every scalar type once
    v.type = GgufType::ARRAY;
    v.elem_type = GgufType::INT64;
    v.array = {int64_t{-1}, int64_t{1} << 40};
    w.set_value("fuzz.i64_array", v);
    w.set_value("fuzz.u8", GgufValue{GgufType::UINT8, GgufType::UINT32, uint64_t{7}, {}});
    w.set_value("fuzz.i16", GgufValue{GgufType::INT16, GgufType::UINT32, int64_t{-7}, {}});
    w.set_value("fuzz.f64", GgufValue{GgufType::FLOAT64, GgufType::UINT32, 0.5, {}});
    add_small_tensors(w, 2);
    write_seed("gguf", "qwen2_v2.gguf", bytes_of(w));
  }
  write_seed("gguf", "empty.gguf", bytes_of(GgufWriter()));
}

// --- tokenizer: byte 0 picks the vocabulary (0-4 BPE pre-tokenizers, 5-6 SentencePiece),
// byte 1 the flags (1 add_bos, 2 parse_special, 4 decode ids), then the text

void tokenizer_seeds() {
  const std::vector<std::string> texts =
      {"Hello world, the answer is 12345!",
       "  x\n\n\ty  \r\n",
       "caf\xc3\xa9 \xe4\xb8\xad it's",
       "<|im_start|>user\nhi<|im_end|><tool>",
       "<s>hello</s><start_of_turn>\xe2\x96\x81world",
       "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 I'LL we've 3.14"};
  for (int vocab = 0; vocab < 7; ++vocab) {
    for (size_t i = 0; i < texts.size(); ++i) {
      const char flags = static_cast<char>(i % 4);
      write_seed("tokenizer", fmt::format("v{}_text{}", vocab, i),
                 std::string{static_cast<char>(vocab), flags} + texts[i]);
    }
    std::string ids{static_cast<char>(vocab), 4 | 2};
    for (const int id : {1, 70, 300, 265, 2, 40, 0}) {
      ids += static_cast<char>(id & 0xff);
      ids += static_cast<char>(id >> 8);
    }
    write_seed("tokenizer", fmt::format("v{}_ids", vocab), ids);
  }
}

// --- calibration: versions 1 to 3, a hybrid stack

Calibration small_calibration(int n_layers, std::vector<int> layers, bool importance) {
  Calibration c;
  c.model_sha256 = std::string(64, 'a');
  c.model_name = "fuzz-seed";
  c.arch = "llama";
  c.n_layers = n_layers;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  c.fcs = fc_dims(c.rope_layout, c.fc_layout, c.head_dim, c.head_dim);
  c.k = 16;
  c.n_samples = 2;
  c.tokens_per_sample = 64;
  c.steps = 4;
  c.text_name = "seed.txt";
  c.text_sha256 = std::string(64, 'b');
  c.text_tokens = 128;
  c.layers = std::move(layers);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  c.mean_ca.resize(c.layers.size() * c.n_heads * c.n_fc());
  for (float& x : c.mean_ca) x = u(rng);
  c.rank_all();
  if (importance) {
    c.channel_importance.resize(c.layers.size() * c.n_heads * c.head_dim);
    for (float& x : c.channel_importance) x = u(rng);
  }
  return c;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void calibration_seeds() {
  const fs::path tmp = fs::temp_directory_path() / "fasa_fuzz_seed_calib.json";
  save_calibration(small_calibration(2, {0, 1}, true), tmp);
  write_seed("calibration", "v3.json", read_all(tmp));
  save_calibration(small_calibration(3, {2}, false), tmp);
  const std::string v2 = read_all(tmp);
  write_seed("calibration", "v2_hybrid.json", v2);
  save_calibration(small_calibration(2, {0, 1}, false), tmp);
  nlohmann::ordered_json v1 = nlohmann::ordered_json::parse(read_all(tmp));
  v1["version"] = 1;  // before hybrid models: no "layers", every layer covered
  v1.erase("layers");
  write_seed("calibration", "v1.json", v1.dump(1) + "\n");
  fs::remove(tmp);
}

// --- tasks: JSON Lines as the generators write them

void tasks_seeds() {
  Task a{"passkey-0", "passkey", "The pass key is 71432. What is the pass key?",
         {"71432"},   8,         TaskMetric::Contains};
  Task b{"qa-1",           "qa", "Who wrote Emma?\nAnswer:", {"Jane Austen", "Austen"}, 16,
         TaskMetric::Exact};
  Task c{"mk-2",     "multikey", "Keys: \xe4\xb8\xad=1, b=2. List them.",
         {"1", "2"}, 32,         TaskMetric::All};
  write_seed("tasks", "three.jsonl",
             task_to_json_line(a) + "\n" + task_to_json_line(b) + "\r\n\n" + task_to_json_line(c) +
                 "\n");
  write_seed("tasks", "extra_fields.jsonl",
             R"({"id": "x", "task": "t", "prompt": "p", "answers": ["a"], "max_new_tokens": 1, )"
             R"("metric": "contains", "length": 4096, "extra": {"depth": 0.5, "list": [1, 2]}})"
             "\n");
}

// --- http: byte 0 is the read size, then the stream

void http_seeds() {
  const std::vector<std::pair<std::string, std::string>> streams = {
      {"get", "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"},
      {"post_pipelined",
       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Content-Length: 15\r\nConnection: keep-alive\r\n\r\n{\"prompt\":\"hi\"}\r\n"
       "GET /v1/models?x=1 HTTP/1.1\r\nAuthorization: Bearer k\r\n\r\n"},
      {"http10", "GET /metrics HTTP/1.0\nConnection: Keep-Alive\n\nGET / HTTP/1.0\n\n"},
      {"expect",
       "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\n"
       "Content-Length: 2\r\nConnection: close\r\n\r\n{}"},
      {"chunked", "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"},
  };
  for (size_t i = 0; i < streams.size(); ++i) {
    write_seed("http", streams[i].first,
               std::string(1, static_cast<char>(i * 5)) + streams[i].second);
  }
}

// --- api: byte 0 picks the endpoint (bit 0: chat) and the default policy (bit 1)

void api_seeds() {
  struct Seed {
    const char* name;
    char selector;
    std::string body;
  };
  const std::vector<Seed> bodies = {
      {"completion", 0,
       "{\"model\": \"m\", \"prompt\": \"Once upon\", \"max_tokens\": 16, \"temperature\": "
       "0.7, \"top_p\": 0.9, \"top_k\": 40, \"min_p\": 0.05, \"seed\": -3, \"stop\": [\"\\n\", "
       "\"END\"], \"stream\": true, \"stream_options\": {\"include_usage\": true}, \"n\": 1, "
       "\"user\": \"u\", \"presence_penalty\": 0, \"logit_bias\": {}, \"logprobs\": 0, "
       "\"echo\": false}"},
      {"completion_fasa", 2,
       "{\"prompt\": [\"x\"], \"fasa\": {\"policy\": \"streaming:sinks=4\", \"budget\": 32}}"},
      {"chat", 1,
       "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": "
       "\"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi\"}], \"name\": \"a\"}, "
       "{\"role\": \"assistant\", \"content\": \"Hello\"}, {\"role\": \"developer\", "
       "\"content\": \"\\u00e9\"}], \"max_completion_tokens\": 8, \"logprobs\": false, "
       "\"tools\": null, \"stop\": \"x\"}"},
      {"chat_fasa", 3,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"fasa\": {\"policy\": "
       "\"quest\", \"budget\": 64, \"page\": 8, \"dense_layers\": [0]}}"},
      {"chat_fasa_opts", 1,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"fasa\": {\"policy\": "
       "\"h2o\", \"budget\": 16, \"recent\": 0.25}}"},
      {"chat_json_schema", 1,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"response_format\": "
       "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"City\", \"strict\": "
       "true, \"schema\": {\"$defs\": {\"K\": {\"enum\": [\"a\", \"b\"], \"type\": "
       "\"string\"}}, \"type\": \"object\", \"properties\": {\"name\": {\"type\": "
       "\"string\"}, \"n\": {\"type\": [\"integer\", \"null\"]}, \"k\": {\"$ref\": "
       "\"#/$defs/K\"}, \"t\": {\"type\": \"array\", \"items\": {\"anyOf\": [{\"type\": "
       "\"number\"}, {\"const\": true}]}, \"maxItems\": 2}}, \"required\": [\"name\", "
       "\"k\"], \"additionalProperties\": false}}}}"},
      {"completion_guided_json", 0,
       "{\"prompt\": \"x\", \"guided_json\": \"{\\\"type\\\": \\\"object\\\", "
       "\\\"additionalProperties\\\": {\\\"oneOf\\\": [{\\\"type\\\": \\\"boolean\\\"}, "
       "{\\\"$ref\\\": \\\"#\\\"}]}}\"}"},
      {"chat_guided_choice", 1,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"guided_choice\": "
       "[\"yes\", \"no\", \"y\\u00e9s\"]}"},
      {"completion_prompts_stop_controls", 0,
       "{\"prompt\": [\"a\", \"b\", \"\"], \"n\": 2, \"min_tokens\": 3, \"ignore_eos\": "
       "true, \"stop_token_ids\": [2, 0], \"typical_p\": 1, \"grammar\": \"\"}"},
      {"chat_refused_fields", 1,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"echo\": false, "
       "\"modalities\": [\"text\"], \"add_generation_prompt\": true, \"n_predict\": -1, "
       "\"mirostat\": 0}"},
      {"chat_tools", 1,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assist"
       "ant\", \"content\": null, \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function"
       "\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Pa"
       "ris\\\"}\"}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": \"22"
       "\"}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
       " \"description\": \"d\", \"parameters\": {\"type\": \"object\", \"properties\": {\"c"
       "ity\": {\"type\": \"string\"}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": "
       "[\"city\"]}}}, {\"type\": \"function\", \"function\": {\"name\": \"now\"}}], \"tool_"
       "choice\": \"required\", \"parallel_tool_calls\": true}"},
  };
  for (const Seed& s : bodies) write_seed("api", s.name, std::string(1, s.selector) + s.body);
}

}  // namespace
}  // namespace fasa::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR   (writes CORPUS_DIR/<target>/<seed>)\n", argv[0]);
    return 1;
  }
  fasa::fuzz::g_root = argv[1];
  fasa::fuzz::gguf_seeds();
  fasa::fuzz::tokenizer_seeds();
  fasa::fuzz::calibration_seeds();
  fasa::fuzz::tasks_seeds();
  fasa::fuzz::http_seeds();
  fasa::fuzz::api_seeds();
  return 0;
}
