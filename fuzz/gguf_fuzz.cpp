// Fuzz target: the GGUF reader (io/gguf.cpp) and the metadata readers that run on every file
// `fasa` opens: ModelConfig::from_gguf, Tokenizer::from_gguf, the chat-template detection.
// Contract: any bytes either open or throw fasa::Error; whatever opens is internally consistent
// (every tensor's data lies inside the file, typed getters agree with the stored types).
#include <cstring>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/model/config.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "fuzz_util.h"

namespace fasa::fuzz {
namespace {

template <typename F>
void expect_ok_or_error(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

void check_tensors(const GgufFile& g) {
  for (const GgufTensorInfo& t : g.tensors()) {
    FASA_FUZZ_EXPECT(t.data != nullptr && t.n_elements > 0 && !t.ne.empty());
    FASA_FUZZ_EXPECT(t.offset % g.alignment() == 0);
    FASA_FUZZ_EXPECT(t.n_bytes <= g.file_bytes());
    if (t.n_bytes > 0) {  // touch both ends: a range outside the mapping faults here
      volatile uint8_t sink = t.data[0];
      sink = t.data[t.n_bytes - 1];
      (void)sink;
    }
    FASA_FUZZ_EXPECT(g.find_tensor(t.name) != nullptr);
  }
}

void check_getters(const GgufFile& g) {
  for (const GgufKV& kv : g.metadata()) {
    FASA_FUZZ_EXPECT(g.find(kv.key) != nullptr);
    expect_ok_or_error([&] { g.get_string(kv.key); });
    expect_ok_or_error([&] { g.get_int(kv.key); });
    expect_ok_or_error([&] { g.get_float(kv.key); });
    expect_ok_or_error([&] { g.get_bool_or(kv.key, false); });
    expect_ok_or_error([&] { g.get_string_array(kv.key); });
    expect_ok_or_error([&] { g.get_int_array(kv.key); });
    expect_ok_or_error([&] { g.get_float_array(kv.key); });
  }
}

void run(const uint8_t* data, size_t size) {
  const std::string& path = write_scratch(data, size);
  std::shared_ptr<const GgufFile> g;
  try {
    g = GgufFile::open(path);
  } catch (const Error&) {
    return;
  }
  check_tensors(*g);
  check_getters(*g);
  expect_ok_or_error([&] { ModelConfig::from_gguf(*g); });
  expect_ok_or_error([&] {
    const auto tok = Tokenizer::from_gguf(*g);
    // A tokenizer that builds encodes and decodes.
    const std::vector<int32_t> ids = tok->encode("Hello, world! 123 <s>\n\xc3\xa9", true, true);
    for (const int32_t id : ids) FASA_FUZZ_EXPECT(id >= 0 && id < tok->n_vocab());
    tok->decode(ids, true);
  });
  expect_ok_or_error([&] {
    const ChatFormat fmt = detect_chat_format(*g);
    render_chat(fmt, {{"system", "s"}, {"user", "u"}}, true, chat_default_system(*g));
  });
}

}  // namespace
}  // namespace fasa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasa::fuzz::run(data, size);
  return 0;
}
