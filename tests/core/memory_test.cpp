// core/memory.h: the RAM a process may still take, from /proc/meminfo and its cgroup's files.
#include "fasa/core/memory.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/expect_error.h"
#include "support/scoped_env.h"

namespace fasa {
namespace {

const char* kMeminfo =
    "MemTotal:       24000000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:   20000000 kB\n";

TEST(AvailableMemory, MemAvailableWithoutACgroup) {
  const AvailableMemory a = available_memory_from(kMeminfo, "", "", "", "");
  EXPECT_EQ(a.bytes, 20000000ull * 1024);
  EXPECT_EQ(a.source, "MemAvailable");
}

TEST(AvailableMemory, CgroupV1LimitLessItsUseAndLessReclaimableCache) {
  // limit 8 GB, 3 GB used of which 1 GB is inactive page cache: 6 GB left.
  const AvailableMemory a =
      available_memory_from(kMeminfo, "8000000000\n", "3000000000\n",
                            "cache 1500000000\nhierarchical_memory_limit 8000000000\n"
                            "total_inactive_file 1000000000\n",
                            "v1");
  EXPECT_EQ(a.bytes, 6000000000ull);
  EXPECT_EQ(a.source, "cgroup v1 memory limit 8.0 GB");
  // A parent's smaller limit (hierarchical) wins.
  const AvailableMemory p = available_memory_from(kMeminfo, "8000000000\n", "0\n",
                                                  "hierarchical_memory_limit 5000000000\n", "v1");
  EXPECT_EQ(p.bytes, 5000000000ull);
}

TEST(AvailableMemory, UnlimitedCgroupsAndLargeLimitsLeaveMemAvailable) {
  EXPECT_EQ(available_memory_from(kMeminfo, "9223372036854771712\n", "100\n",
                                  "hierarchical_memory_limit 9223372036854771712\n", "v1")
                .source,
            "MemAvailable");
  EXPECT_EQ(available_memory_from(kMeminfo, "max\n", "100\n", "", "v2").source, "MemAvailable");
  // A limit above what the machine has left: MemAvailable is the smaller.
  EXPECT_EQ(available_memory_from(kMeminfo, "64000000000\n", "0\n", "", "v2").source,
            "MemAvailable");
}

TEST(AvailableMemory, CgroupV2) {
  const AvailableMemory a =
      available_memory_from(kMeminfo, "4000000000\n", "2500000000\n",
                            "anon 2000000000\ninactive_file 500000000\n", "v2");
  EXPECT_EQ(a.bytes, 2000000000ull);
  EXPECT_EQ(a.source, "cgroup v2 memory limit 4.0 GB");
}

TEST(AvailableMemory, TheEnvironmentOverrides) {
  {
    test::ScopedEnv env("FASA_MEMORY_AVAILABLE", "12345");
    const AvailableMemory a = available_memory();
    EXPECT_EQ(a.bytes, 12345u);
    EXPECT_EQ(a.source, "FASA_MEMORY_AVAILABLE");
  }
  for (const char* bad : {"", "12k", "-5", "lots"}) {
    test::ScopedEnv env("FASA_MEMORY_AVAILABLE", bad);
    test::expect_error([] { available_memory(); }, "is not a number of bytes");
  }
}

TEST(AvailableMemory, ThisMachineHasSomeFromANamedSource) {
  if (std::getenv("FASA_MEMORY_AVAILABLE")) GTEST_SKIP() << "FASA_MEMORY_AVAILABLE is set";
  const AvailableMemory here = available_memory();
  EXPECT_GT(here.bytes, 0u);
  EXPECT_NE(here.source, "unknown");
}

TEST(FormatBytes, OneDecimalGigabytes) {
  EXPECT_EQ(format_bytes(17179869184ull), "17.2 GB");
  EXPECT_EQ(format_bytes(0), "0.0 GB");
}

}  // namespace
}  // namespace fasa
