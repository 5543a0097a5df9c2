// Calibrations kept per model (attention/calibration_store.h): `fasa calibrate` without -o
// stores the file under $FASA_HOME/calibrations/<model sha256>/, `fasa calib list` shows it,
// and a calibrated policy given no calib= (or calib=auto) takes the newest one of its model.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "fasa/attention/calibration_store.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "support/cli_runner.h"
#include "support/scoped_env.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;

TEST(CalibrationStore, PathsNewestFirstAndSpecs) {
  const fs::path home = test::fresh_dir("calib_store_home");
  test::ScopedEnv env("FASA_HOME", home.c_str());
  const std::string sha(64, 'a');
  EXPECT_EQ(stored_calibration_path(sha, "/texts/austen emma.txt"),
            home / "calibrations" / sha / "austen_emma.json");
  EXPECT_EQ(stored_calibration_path(sha, ".hidden"),
            home / "calibrations" / sha / "text.hidden.json");
  EXPECT_EQ(find_stored_calibration(sha), "");
  const fs::path older = stored_calibration_path(sha, "a.txt");
  const fs::path newer = stored_calibration_path(sha, "b.txt");
  fs::create_directories(older.parent_path());
  std::ofstream(older) << "{}";
  std::ofstream(newer) << "{}";
  const timespec old_times[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, older.c_str(), old_times, 0), 0);
  EXPECT_EQ(find_stored_calibration(sha), newer.string());
  EXPECT_TRUE(is_stored_calibration(newer.string()));
  EXPECT_FALSE(is_stored_calibration("/tmp/elsewhere.json"));

  PolicyContext ctx;
  ctx.model_sha256 = [sha] { return sha; };
  EXPECT_EQ(with_stored_calibration("fasa:budget=8", ctx), "fasa:budget=8,calib=" + newer.string());
  EXPECT_EQ(with_stored_calibration("fasa:calib=auto,budget=8", ctx),
            "fasa:budget=8,calib=" + newer.string());
  EXPECT_EQ(with_stored_calibration("fasa:calib=/x.json,budget=8", ctx),
            "fasa:calib=/x.json,budget=8");
  EXPECT_EQ(with_stored_calibration("quest:budget=8", ctx), "quest:budget=8");
  EXPECT_EQ(resolve_calibration("auto", ctx, "fasa"), newer.string());
  EXPECT_EQ(resolve_calibration("/x.json", ctx, "fasa"), "/x.json");
  PolicyContext other;
  other.model_sha256 = [] { return std::string(64, 'b'); };
  // Nothing stored for the model: auto is online calibration.
  EXPECT_EQ(resolve_calibration("auto", other, "fasa"), "online");
  EXPECT_EQ(resolve_calibration("online", ctx, "fasa"), "online");
  EXPECT_EQ(with_stored_calibration("fasa:budget=8", other), "fasa:budget=8,calib=online");
  EXPECT_EQ(with_stored_calibration("fasa:calib=online,budget=8", ctx),
            "fasa:calib=online,budget=8");
  EXPECT_EQ(calibration_kind("fasa:calib=online,budget=8"), "online");
  EXPECT_EQ(calibration_kind("fasa:budget=8,calib=" + newer.string()), "stored");
  EXPECT_EQ(calibration_kind("fasa:calib=/x.json,budget=8"), "file");
  EXPECT_EQ(calibration_kind("fasa:budget=8"), "");
  EXPECT_EQ(calibration_kind("quest:budget=8"), "");
}

// The whole flow on a tiny model: calibrate without -o, list, run without calib=.
TEST(CalibrationStore, CalibrateWithoutOutputStoresListsAndServesPolicies) {
  const fs::path dir = test::fresh_dir("calib_store_cli");
  const std::map<std::string, std::string> env = {{"FASA_HOME", (dir / "home").string()}};
  test::TinySpec spec;
  spec.byte_tokenizer = true;
  const std::string model = (dir / "tiny.gguf").string();
  test::write_tiny_model(model, spec);
  const std::string text = (dir / "my text.txt").string();
  {
    std::mt19937 rng(3);
    std::ofstream f(text);
    for (int i = 0; i < 400; ++i) f << static_cast<char>('a' + rng() % 26) << (i % 7 ? "" : " ");
  }
  const std::vector<std::string> run = {"run",    "-m", model,      "-p",   "abcdefgh", "-n", "2",
                                        "--temp", "0",  "--policy", "fasa", "--budget", "4"};
  // Nothing stored: FASA calibrates online on the prompt and says so.
  const test::CliRun before = test::run_cli(run, env);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.err.find(
                "fasa: calibration: online (window 32; none stored for this model file)"),
            std::string::npos)
      << before.err;
  EXPECT_NE(before.err.find("fasa: calibration: online from the queries of the 8 last prompt"),
            std::string::npos)
      << before.err;
  EXPECT_NE(before.err.find("fasa: summary: KV read: "), std::string::npos) << before.err;

  const test::CliRun cal = test::run_cli({"calibrate", "-m", model, "--text", text, "--tokens",
                                          "40", "--samples", "2", "--steps", "3", "--k", "8"},
                                         env);
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const std::string stored =
      (dir / "home" / "calibrations" / sha256_file_hex(model) / "my_text.json").string();
  EXPECT_EQ(cal.out, stored + "\n");
  EXPECT_NE(cal.err.find(" left\n"), std::string::npos) << cal.err;  // the ETA
  EXPECT_NE(cal.err.find("(stored:"), std::string::npos) << cal.err;

  const test::CliRun list = test::run_cli({"calib", "list", "--json"}, env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const nlohmann::json l = nlohmann::json::parse(list.out);
  ASSERT_EQ(l.size(), 1u) << list.out;
  EXPECT_EQ(l[0]["path"], stored);
  EXPECT_EQ(l[0]["text"], "my text.txt");
  EXPECT_EQ(l[0]["version"], 4);
  EXPECT_EQ(l[0]["model_sha256"], sha256_file_hex(model));
  const test::CliRun text_list = test::run_cli({"calib", "list"}, env);
  EXPECT_NE(text_list.out.find(stored), std::string::npos) << text_list.out;

  const test::CliRun after = test::run_cli(run, env);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.err.find("fasa: calibration: stored " + stored), std::string::npos) << after.err;
  auto given = run;
  given.insert(given.end(), {"--calib", stored});
  const test::CliRun with_file = test::run_cli(given, env);
  ASSERT_EQ(with_file.exit_code, 0) << with_file.err;
  EXPECT_EQ(with_file.out, after.out);  // the same calibration, the same text
  auto by_path = run;
  const std::string copy = (dir / "copy.json").string();
  fs::copy_file(stored, copy);
  by_path.insert(by_path.end(), {"--calib", copy});
  EXPECT_NE(test::run_cli(by_path, env).err.find("fasa: calibration: file " + copy),
            std::string::npos);
}

}  // namespace
}  // namespace fasa
