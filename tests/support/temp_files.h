// Files and directories for tests that write outputs: a fresh directory per test, a file's
// bytes, a directory's entries.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fasa::test {

// An empty directory ::testing::TempDir()/<name>_<pid> (removed and made anew).
std::filesystem::path fresh_dir(const std::string& name);
// The whole file ("" when it cannot be read).
std::string slurp(const std::filesystem::path& p);
// The names of the entries of `d`, sorted.
std::vector<std::string> names_in(const std::filesystem::path& d);

}  // namespace fasa::test
