// SHA-256 (libcrypto underneath) against the FIPS 180-4 / NIST example vectors, padding edge
// lengths, streaming, files and the class's move and reuse rules.
#include "fasa/core/sha256.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fasa/core/error.h"

namespace fs = std::filesystem;
using fasa::Sha256;
using fasa::sha256_file_hex;
using fasa::sha256_hex;

namespace {

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

}  // namespace

TEST(Sha256, NistEmpty) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, NistAbc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, Nist448BitMessage) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, Nist896BitMessage) {
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, NistOneMillionA) {
  const char* expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), expected);
  // Same message fed in uneven pieces (1000 x 1000 bytes split as 7 + 993).
  Sha256 h;
  const std::string thousand(1000, 'a');
  for (int i = 0; i < 1000; ++i) {
    h.update(thousand.data(), 7);
    h.update(thousand.data() + 7, 993);
  }
  EXPECT_EQ(h.hex_digest(), expected);
}

// Lengths around the 56-byte padding boundary and the 64-byte block (reference: Python hashlib).
TEST(Sha256, PaddingBoundaries) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto& [n, hex] : cases) EXPECT_EQ(sha256_hex(std::string(n, 'a')), hex) << n;
}

TEST(Sha256, StreamingMatchesOneShotForEveryChunkSize) {
  const std::string data = random_bytes(777, 42);
  const std::string expected = sha256_hex(data);
  for (size_t chunk = 1; chunk <= 200; ++chunk) {
    Sha256 h;
    for (size_t at = 0; at < data.size(); at += chunk) {
      h.update(data.data() + at, std::min(chunk, data.size() - at));
    }
    ASSERT_EQ(h.hex_digest(), expected) << "chunk " << chunk;
  }
}

TEST(Sha256, FinishResetsForReuse) {
  Sha256 h;
  h.update("something else");
  (void)h.finish();
  h.update("abc");
  EXPECT_EQ(h.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FileMatchesInMemory) {
  std::string tmpl = (fs::temp_directory_path() / "fasa-sha256-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  const fs::path file = dir / "data.bin";
  const std::string data = random_bytes((3 << 20) + 17, 7);  // spans several 1 MiB reads
  std::ofstream(file, std::ios::binary) << data;
  EXPECT_EQ(sha256_file_hex(file), sha256_hex(data));
  EXPECT_THROW(sha256_file_hex(dir / "missing.bin"), fasa::Error);
  fs::remove_all(dir);
}

// A file's hash: known vectors on disk, and the same bytes streamed through Sha256 in uneven
// pieces; a directory or a missing file is one clear fasa::Error naming the path.
TEST(Sha256, FileStreamedMatchesOneShotAndKnownVectors) {
  std::string tmpl = (fs::temp_directory_path() / "fasa-sha256-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::ofstream(dir / "empty.bin", std::ios::binary).flush();
  std::ofstream(dir / "abc.txt", std::ios::binary) << "abc";
  std::ofstream(dir / "million_a.txt", std::ios::binary) << std::string(1000000, 'a');
  EXPECT_EQ(sha256_file_hex(dir / "empty.bin"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_file_hex(dir / "abc.txt"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_file_hex(dir / "million_a.txt"),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  const std::string data = random_bytes((2 << 20) + 4099, 11);
  std::ofstream(dir / "random.bin", std::ios::binary) << data;
  Sha256 h;
  std::ifstream in(dir / "random.bin", std::ios::binary);
  std::vector<char> piece(65537);  // not a multiple of the 64-byte block
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    h.update(piece.data(), static_cast<size_t>(in.gcount()));
  }
  const std::string streamed = h.hex_digest();
  EXPECT_EQ(streamed, sha256_file_hex(dir / "random.bin"));
  EXPECT_EQ(streamed, sha256_hex(data));

  try {
    (void)sha256_file_hex(dir);
    ADD_FAILURE() << "hashing a directory did not throw";
  } catch (const fasa::Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
  }
  try {
    (void)sha256_file_hex(dir / "missing.bin");
    ADD_FAILURE() << "hashing a missing file did not throw";
  } catch (const fasa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.bin"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A moved-to Sha256 carries the partial state on; the class stays usable after reuse.
TEST(Sha256, MoveCarriesTheState) {
  Sha256 a;
  a.update("ab");
  Sha256 b(std::move(a));
  b.update("c");
  EXPECT_EQ(b.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 c;
  c.update("junk");
  c = std::move(b);  // b was reset by hex_digest(): c now starts empty
  EXPECT_EQ(c.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, HexValidation) {
  EXPECT_TRUE(fasa::is_sha256_hex(sha256_hex("abc")));
  EXPECT_FALSE(fasa::is_sha256_hex(""));
  EXPECT_FALSE(fasa::is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(fasa::is_sha256_hex(std::string(64, 'A')));  // lowercase only
  EXPECT_FALSE(fasa::is_sha256_hex(std::string(64, 'g')));
}
