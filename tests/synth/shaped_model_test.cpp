// Paper-shaped random-weight models (synth/shaped_model.h): the per-tensor tables against the
// public Q4_K_M files, the random blocks' value ranges, a shrunk model through the engine, the
// streaming GGUF writer, and `fasa synth`'s errors.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "fasa/engine/session.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/dequant.h"
#include "fasa/model/model.h"
#include "fasa/synth/shaped_model.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/cli_runner.h"
#include "support/expect_error.h"
#include "support/ref/kernels_ref.h"
#include "support/temp_files.h"

namespace fasa {
namespace {

using synth::ShapedTensor;

std::map<DType, int> type_counts(const std::vector<ShapedTensor>& ts) {
  std::map<DType, int> n;
  for (const ShapedTensor& t : ts) ++n[t.type];
  return n;
}

const ShapedTensor& find(const std::vector<ShapedTensor>& ts, const std::string& name) {
  for (const ShapedTensor& t : ts) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return ts.front();
}

// The layers whose attn_v and ffn_down are Q6_K.
std::vector<int> q6_layers(const std::vector<ShapedTensor>& ts, int n_layers, const char* what) {
  std::vector<int> out;
  for (int l = 0; l < n_layers; ++l) {
    if (find(ts, fmt::format("blk.{}.{}", l, what)).type == DType::Q6_K) out.push_back(l);
  }
  return out;
}

// llama.cpp's loader prints "type f32: 66, q4_K: 193, q6_K: 33" (292 tensors) for the public
// Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf; the file is 4.92 GB (4.58 GiB), of which all but a few
// MB of tokenizer metadata (280147 merges, the chat template) are tensor data.
TEST(ShapedModel, LlamaTableMatchesThePublicFile) {
  const synth::ShapeSpec s = synth::shape_spec("llama-3.1-8b-instruct-q4_k_m");
  const auto ts = synth::shaped_tensors(s);
  EXPECT_EQ(ts.size(), 292u);
  const auto n = type_counts(ts);
  EXPECT_EQ(n.at(DType::F32), 66);
  EXPECT_EQ(n.at(DType::Q4_K), 193);
  EXPECT_EQ(n.at(DType::Q6_K), 33);
  EXPECT_EQ(n.size(), 3u);
  const std::vector<int> more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  EXPECT_EQ(q6_layers(ts, 32, "attn_v.weight"), more);
  EXPECT_EQ(q6_layers(ts, 32, "ffn_down.weight"), more);
  EXPECT_EQ(find(ts, "token_embd.weight").type, DType::Q4_K);
  EXPECT_EQ(find(ts, "token_embd.weight").ne, (std::vector<int64_t>{4096, 128256}));
  EXPECT_EQ(find(ts, "output.weight").type, DType::Q6_K);
  EXPECT_EQ(find(ts, "blk.5.attn_k.weight").ne, (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(find(ts, "blk.5.ffn_down.weight").ne, (std::vector<int64_t>{14336, 4096}));
  EXPECT_EQ(find(ts, "rope_freqs.weight").ne, (std::vector<int64_t>{64}));
  EXPECT_EQ(synth::shaped_data_bytes(s), 4912898304ull);
  EXPECT_LT(synth::shaped_data_bytes(s), 4920000000ull);  // the public file, less its tokenizer
  EXPECT_GT(synth::shaped_data_bytes(s), 4900000000ull);
}

// Qwen2.5-7B-Instruct Q4_K_M: 28 layers, so use_more_bits picks 14 of them; F32 Q/K/V biases.
// 339 tensors: f32 141 (56 norms, output_norm, 84 biases), q4_K 169, q6_K 29; the public file is
// 4.68 GB.
TEST(ShapedModel, QwenTableFollowsTheQ4KMRule) {
  const synth::ShapeSpec s = synth::shape_spec("qwen2.5-7b-instruct-q4_k_m");
  const auto ts = synth::shaped_tensors(s);
  EXPECT_EQ(ts.size(), 339u);
  const auto n = type_counts(ts);
  EXPECT_EQ(n.at(DType::F32), 141);
  EXPECT_EQ(n.at(DType::Q4_K), 169);
  EXPECT_EQ(n.at(DType::Q6_K), 29);
  const std::vector<int> more = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
  EXPECT_EQ(q6_layers(ts, 28, "attn_v.weight"), more);
  EXPECT_EQ(q6_layers(ts, 28, "ffn_down.weight"), more);
  EXPECT_EQ(find(ts, "blk.0.attn_k.bias").ne, (std::vector<int64_t>{512}));
  EXPECT_EQ(find(ts, "blk.0.attn_q.bias").type, DType::F32);
  EXPECT_EQ(find(ts, "token_embd.weight").ne, (std::vector<int64_t>{3584, 152064}));
  for (const ShapedTensor& t : ts) EXPECT_NE(t.name, "rope_freqs.weight");
  EXPECT_EQ(synth::shaped_data_bytes(s), 4677120000ull);
  EXPECT_LT(synth::shaped_data_bytes(s), 4683000000ull);
}

TEST(ShapedModel, FallbacksWhenARowIsNotAMultipleOf256) {
  EXPECT_EQ(synth::q4_k_m_type("blk.0.ffn_down.weight", 0, 8, 352), DType::Q8_0);  // Q6_K
  EXPECT_EQ(synth::q4_k_m_type("blk.2.ffn_down.weight", 2, 8, 352), DType::Q5_0);  // Q4_K
  EXPECT_EQ(synth::q4_k_m_type("blk.2.ffn_down.weight", 2, 8, 512), DType::Q4_K);
  EXPECT_EQ(synth::q4_k_m_type("blk.3.attn_v.weight", 3, 8, 512), DType::Q6_K);
  EXPECT_EQ(synth::q4_k_m_type("output.weight", -1, 8, 352), DType::Q8_0);
  EXPECT_EQ(synth::q4_k_m_type("token_embd.weight", -1, 8, 352), DType::Q5_0);
  EXPECT_EQ(synth::q4_k_m_type("blk.3.attn_q.weight", 3, 8, 48), DType::F16);
  EXPECT_TRUE(synth::use_more_bits(0, 8));
  EXPECT_FALSE(synth::use_more_bits(1, 8));
  EXPECT_FALSE(synth::use_more_bits(2, 8));
  EXPECT_TRUE(synth::use_more_bits(3, 8));  // (3 - 1) % 3 == 2
  EXPECT_TRUE(synth::use_more_bits(7, 8));
}

// convert_hf_to_gguf.py's llama3 factors for theta 500000, head_dim 128, factor 8, low 1,
// high 4, original context 8192: wavelengths under 2048 keep 1 (29 pairs), over 8192 get 8 (29),
// the 6 between are smoothed and rise.
TEST(ShapedModel, Llama3RopeFactors) {
  const auto f = synth::llama3_rope_factors(synth::shape_spec("llama-3.1-8b-instruct-q4_k_m"));
  ASSERT_EQ(f.size(), 64u);
  for (int i = 0; i < 29; ++i) EXPECT_EQ(f[i], 1.0f) << i;
  for (int i = 35; i < 64; ++i) EXPECT_EQ(f[i], 8.0f) << i;
  for (int i = 29; i < 35; ++i) {
    EXPECT_GT(f[i], f[i - 1]) << i;
    EXPECT_LT(f[i], 8.0f) << i;
  }
}

// Every block type gives finite values of about the asked deviation around 0, and one seed
// always the same bytes.
TEST(ShapedModel, RandomBlocksHaveRealisticValues) {
  for (DType type : {DType::Q4_K, DType::Q6_K, DType::Q5_0, DType::Q8_0, DType::F16}) {
    const DTypeInfo& info = dtype_info(type);
    const int64_t n_blocks = 4096 / info.block_elems * 4;
    std::vector<uint8_t> a(n_blocks * info.block_bytes), b(a.size());
    synth::fill_random_blocks(type, n_blocks, 0.02f, 7, a.data());
    synth::fill_random_blocks(type, n_blocks, 0.02f, 7, b.data());
    EXPECT_EQ(a, b) << info.name;
    std::vector<float> v(n_blocks * info.block_elems);
    ref::dequantize_row(type, a.data(), v.data(), static_cast<int64_t>(v.size()));
    double sum = 0.0, sq = 0.0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << info.name;
      sum += x;
      sq += static_cast<double>(x) * x;
    }
    const double mean = sum / v.size(), sd = std::sqrt(sq / v.size() - mean * mean);
    EXPECT_LT(std::abs(mean), 0.002) << info.name;
    EXPECT_GT(sd, 0.016) << info.name;
    EXPECT_LT(sd, 0.024) << info.name;
    synth::fill_random_blocks(type, n_blocks, 0.02f, 8, b.data());
    EXPECT_NE(a, b) << info.name;
  }
}

// A shrunk model (same generator, metadata and tokenizer layout, small sizes) loads, encodes a
// prompt with its special tokens at their (shifted) ids, and gives finite logits that differ
// between tokens. d_ff 352 sends ffn_down to the fallback types Q5_0 / Q8_0.
TEST(ShapedModel, ShrunkModelsRun) {
  const auto dir = test::fresh_dir("shaped_shrunk");
  for (const std::string& name : synth::shape_names()) {
    for (int d_ff : {512, 352}) {
      const synth::ShapeSpec s = synth::shrink(synth::shape_spec(name), {.n_layers = 4,
                                                                         .d_model = 256,
                                                                         .n_heads = 4,
                                                                         .n_kv_heads = 2,
                                                                         .d_ff = d_ff,
                                                                         .n_vocab = 1024});
      const std::string path = (dir / fmt::format("{}-{}.gguf", name, d_ff)).string();
      synth::write_shaped_model(s, path, 3);
      auto model = Model::load(path);
      const ModelConfig& c = model->config();
      EXPECT_EQ(c.n_layers, 4);
      EXPECT_EQ(c.n_vocab, 1024);
      EXPECT_EQ(c.qkv_bias, s.qkv_bias);
      const Tokenizer& tok = model->require_tokenizer();
      const std::string eos_text = s.specials[s.eos_id - s.specials.front().first].second;
      const auto ids = tok.encode("Hi there" + eos_text, true, true);
      ASSERT_GE(ids.size(), 9u);
      EXPECT_EQ(ids.back(), s.eos_id);
      EXPECT_EQ(ids.front() == s.bos_id, s.add_bos);
      if (d_ff == 352) {  // 4 layers: use_more_bits holds for layer 3 only
        EXPECT_EQ(model->file().find_tensor("blk.0.ffn_down.weight")->type, DType::Q5_0);
        EXPECT_EQ(model->file().find_tensor("blk.3.ffn_down.weight")->type, DType::Q8_0);
      }
      SessionOptions so;
      so.n_ctx = 64;
      Session session(model, so);
      const std::vector<float> first = session.prefill(ids);
      const std::vector<float>& next = session.decode(ids[1]);
      for (size_t i = 0; i < first.size(); ++i) {
        ASSERT_TRUE(std::isfinite(first[i]) && std::isfinite(next[i])) << name << " " << i;
      }
      EXPECT_NE(first, next);
    }
  }
}

TEST(ShapedModel, BadShapesAreRefused) {
  test::expect_error([] { synth::shape_spec("llama-9b"); },
                     "unknown shape 'llama-9b' (known: llama-3.1-8b-instruct-q4_k_m, "
                     "qwen2.5-7b-instruct-q4_k_m)");
  const synth::ShapeSpec llama = synth::shape_spec("llama-3.1-8b-instruct-q4_k_m");
  test::expect_error([&] { synth::shrink(llama, {.n_heads = 5}); }, "multiple of n_heads");
  test::expect_error([&] { synth::shrink(llama, {.n_vocab = 300}); }, "is not a free id");
}

// The streaming path (tensors made by a callback, piece by piece) writes exactly the bytes of
// the in-memory writer, whatever the piece size.
TEST(ShapedModel, StreamingWriterWritesTheSameBytes) {
  const auto dir = test::fresh_dir("shaped_stream");
  std::vector<uint8_t> q(144 * 6 * 5);  // Q4_K [1536, 5]
  synth::fill_random_blocks(DType::Q4_K, 30, 0.1f, 1, q.data());
  const std::vector<float> norm = {1.0f, 2.0f, 3.0f};
  GgufWriter whole;
  whole.set_string("general.architecture", "llama");
  whole.add_tensor("a", DType::Q4_K, {1536, 5}, q.data(), q.size());
  whole.add_tensor_f32("n", {3}, norm);
  for (size_t piece : {size_t{1}, size_t{900}, size_t{1} << 20}) {
    GgufWriter streamed;
    streamed.set_string("general.architecture", "llama");
    streamed.set_piece_bytes(piece);
    int64_t next_row = 0;
    streamed.add_tensor_rows("a", DType::Q4_K, {1536, 5}, [&](int64_t r0, int64_t n, uint8_t* out) {
      EXPECT_EQ(r0, next_row);  // in row order, each row once
      next_row = r0 + n;
      std::copy(q.begin() + r0 * 864, q.begin() + (r0 + n) * 864, out);
    });
    streamed.add_tensor_f32("n", {3}, norm);
    const std::string path = (dir / fmt::format("s{}.gguf", piece)).string();
    uint64_t last_done = 0, total = 0;
    streamed.write(path, [&](uint64_t done, uint64_t all) {
      EXPECT_GE(done, last_done);
      last_done = done;
      total = all;
    });
    EXPECT_EQ(next_row, 5);
    const std::vector<uint8_t> expected = whole.to_bytes();
    const std::string got = test::slurp(path);
    EXPECT_EQ(got, std::string(expected.begin(), expected.end())) << piece;
    EXPECT_EQ(last_done, expected.size());
    EXPECT_EQ(total, expected.size());
    EXPECT_EQ(streamed.file_bytes(), expected.size());
    next_row = 0;  // to_bytes() makes the rows again
    EXPECT_EQ(streamed.to_bytes(), expected);
  }
  GgufWriter w;
  test::expect_error(
      [&] {
        w.add_tensor_rows("x", DType::Q4_K, {100, 2}, nullptr);
      },
      "no fill function");
  test::expect_error(
      [&] {
        w.add_tensor_rows("x", DType::Q4_K, {100, 2}, [](int64_t, int64_t, uint8_t*) {});
      },
      "not a multiple of the Q4_K block size 256");
}

// `fasa synth`: --list, and each bad input one clear error with nothing left behind.
TEST(ShapedModel, SynthCliErrors) {
  const auto list = test::run_cli({"synth", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("llama-3.1-8b-instruct-q4_k_m\tllama, 32 layers"), std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("qwen2.5-7b-instruct-q4_k_m\tqwen2, 28 layers"), std::string::npos);
  auto expect_clean = [](const test::CliRun& r, const std::string& needle) {
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("fasa: error: " + needle), std::string::npos) << r.err;
  };
  const auto dir = test::fresh_dir("shaped_cli");
  const std::string out = (dir / "m.gguf").string();
  expect_clean(test::run_cli({"synth", "--shape", "gpt-5", "-o", out}), "unknown shape 'gpt-5'");
  expect_clean(test::run_cli({"synth", "--shape", "qwen2.5-7b-instruct-q4_k_m"}), "give -o FILE");
  expect_clean(test::run_cli({"synth", "-o", out}), "give --shape NAME");
  expect_clean(test::run_cli({"synth", "--shape", "qwen2.5-7b-instruct-q4_k_m", "-o",
                              (dir / "no" / "m.gguf").string()}),
               "cannot write");
  // A full disk: the shell caps the file size (ulimit -f, 1 MiB) and ignores SIGXFSZ, so the
  // write fails with EFBIG the way a full disk fails with ENOSPC. The target never appears and
  // the temporary file is removed.
  const std::string cmd = fmt::format(
      "bash -c \"trap '' XFSZ; ulimit -f 1024; exec '{}' synth --shape "
      "llama-3.1-8b-instruct-q4_k_m -o '{}'\" 2>&1",
      FASA_CLI_PATH, out);
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << text;
  EXPECT_NE(text.find("fasa: error: cannot write '" + out + "': File too large"), std::string::npos)
      << text;
  EXPECT_EQ(test::names_in(dir), std::vector<std::string>{}) << text;
}

}  // namespace
}  // namespace fasa
