// The architecture table (model/arch.h): every row round-trips between its name and its Arch, and
// a name without a row is refused, by parse_arch and by the loader with one clear error.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fasa/io/gguf.h"
#include "fasa/model/arch.h"
#include "fasa/model/config.h"
#include "support/expect_error.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

TEST(ArchTable, EveryRowRoundTripsNameAndEnum) {
  std::set<std::string> names;
  for (const ArchInfo& row : arch_table()) {
    const std::optional<Arch> parsed = parse_arch(row.name);
    ASSERT_TRUE(parsed.has_value()) << row.name;
    EXPECT_EQ(*parsed, row.arch) << row.name;
    EXPECT_STREQ(arch_name(row.arch), row.name);
    EXPECT_EQ(&arch_info(row.arch), &row) << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << "two rows named " << row.name;
  }
  EXPECT_EQ(arch_names(), "llama, qwen2, qwen3, phi3, gemma3");
}

TEST(ArchTable, UnknownNameIsRefused) {
  EXPECT_FALSE(parse_arch("mamba").has_value());
  EXPECT_FALSE(parse_arch("").has_value());
  EXPECT_FALSE(parse_arch("Llama").has_value());  // names are exact, as GGUF writes them
  EXPECT_FALSE(parse_arch("gemma").has_value());
}

TEST(ArchTable, LoaderRefusesAnUnknownArchitecture) {
  test::TinySpec s;
  s.arch = "mamba";
  const std::string path = (test::fresh_dir("arch_table_unknown") / "mamba.gguf").string();
  test::write_tiny_model(path, s);
  const auto f = GgufFile::open(path);
  test::expect_error([&] { ModelConfig::from_gguf(*f); },
                     "unsupported architecture 'mamba' (supported: llama, qwen2, qwen3, phi3, "
                     "gemma3)");
}

TEST(ArchTable, ConfigReadsTheRow) {
  for (const char* name : {"llama", "qwen2", "gemma3"}) {
    test::TinySpec s;
    s.arch = name;
    if (s.arch == "gemma3") s.sliding_window = 8;
    const std::string path =
        (test::fresh_dir("arch_table_" + s.arch) / (s.arch + ".gguf")).string();
    test::write_tiny_model(path, s);
    const ModelConfig c = ModelConfig::from_gguf(*GgufFile::open(path));
    const ArchInfo& row = arch_info(c.arch_id);
    EXPECT_EQ(c.arch, row.name);
    EXPECT_EQ(c.rope_layout, row.rope_layout) << name;
    EXPECT_EQ(c.qkv_bias, row.qkv_bias) << name;
    EXPECT_EQ(c.qk_norm, row.qk_norm) << name;
    EXPECT_EQ(c.post_norms, row.post_norms) << name;
    EXPECT_EQ(c.ffn_act, row.ffn_act) << name;
    EXPECT_EQ(c.n_windowed_layers() > 0, row.sliding_window) << name;
  }
}

}  // namespace
}  // namespace fasa
