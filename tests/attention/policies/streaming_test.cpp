// `streaming` (policies/streaming.cpp): the sinks, then the newest slots.
#include <gtest/gtest.h>

#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/policy.h"

namespace fasa {
namespace {

using test::policy_from;
using test::RandomCache;

TEST(StreamingPolicy, SinksThenTheNewestSlots) {
  RandomCache f(40);
  auto p = policy_from("streaming:budget=10,sinks=4");
  Selection s;
  p->select(f.query(0, 0), s);
  ASSERT_FALSE(s.all);
  EXPECT_FALSE(s.per_head);
  EXPECT_EQ(s.bytes_read, 0u);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{0, 1, 2, 3, 34, 35, 36, 37, 38, 39}));
  // Default 8 sinks; a budget at or below the sinks still keeps the newest slot.
  auto d = policy_from("streaming:budget=3");
  d->select(f.query(1, 1), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{0, 1, 39}));
  // A fraction of the context: 0.25 of 40 = 10 slots.
  auto fr = policy_from("streaming:budget=0.25,sinks=0");
  fr->select(f.query(0, 1), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}));
  // Budget covering the context: dense.
  auto all = policy_from("streaming:budget=40");
  all->select(f.query(0, 0), s);
  EXPECT_TRUE(s.all);
}

}  // namespace
}  // namespace fasa
