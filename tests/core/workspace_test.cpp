// Session-owned scratch (core/workspace.h): frames in stack order, growth that settles into one
// block, per-arena objects, and the binding that parallel regions carry to their workers.
#include "fasa/core/workspace.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fasa/core/parallel.h"
#include "support/threads_guard.h"

namespace fasa {
namespace {

TEST(Workspace, FramesAreAlignedAndGiveBackInStackOrder) {
  Workspace ws;
  WorkspaceScope bind(ws);
  ws.arena(0).reserve(4096);
  float* first = nullptr;
  {
    ScratchFrame f;
    first = f.take<float>(3);
    uint8_t* b = f.take<uint8_t>(1);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
    EXPECT_NE(static_cast<void*>(first), static_cast<void*>(b));
    {
      ScratchFrame inner;
      int* x = inner.take<int>(10);
      std::memset(x, 0xff, 10 * sizeof(int));
    }
    first[0] = 1.5f;
    ScratchFrame again;  // the inner frame's space is free again: taken at the same place
    EXPECT_EQ(static_cast<void*>(again.take<uint8_t>(1)), static_cast<void*>(b + 64));
    EXPECT_EQ(first[0], 1.5f);
  }
  ScratchFrame next;
  EXPECT_EQ(next.take<float>(3), first);
  EXPECT_EQ(ws.stats().grows, 0u);
}

// A take beyond the reservation opens a block (counted); when the last frame closes, the arena
// becomes one block of the peak size, so the same work again adds nothing.
TEST(Workspace, OverflowSettlesIntoOneBlockOfThePeak) {
  Workspace ws;
  WorkspaceScope bind(ws);
  ws.arena(0).reserve(256);
  auto work = [] {
    ScratchFrame f;
    uint8_t* a = f.take<uint8_t>(200);
    uint8_t* b = f.take<uint8_t>(1000);  // does not fit: an overflow block
    std::memset(a, 1, 200);
    std::memset(b, 2, 1000);
    EXPECT_EQ(a[199], 1);
    EXPECT_EQ(b[999], 2);
  };
  work();
  Workspace::Stats s = ws.stats();
  EXPECT_EQ(s.grows, 1u);
  EXPECT_EQ(s.peak, 256u + 1024u);  // 64-byte rounded
  EXPECT_EQ(s.reserved, s.peak);    // consolidated
  work();
  work();
  EXPECT_EQ(ws.stats().grows, 1u);
  EXPECT_EQ(ws.stats().reserved, s.peak);
}

struct Counted {
  static inline int alive = 0;
  std::vector<int> v;
  Counted() { ++alive; }
  ~Counted() { --alive; }
};

TEST(Workspace, ObjectsLiveAsLongAsTheWorkspace) {
  {
    Workspace ws;
    WorkspaceScope bind(ws);
    Counted& a = workspace_object<Counted>();
    a.v.assign(5, 7);
    EXPECT_EQ(&workspace_object<Counted>(), &a);  // one per type and arena
    EXPECT_EQ(Counted::alive, 1);
    Workspace other;
    {
      WorkspaceScope inner(other);  // scopes nest
      EXPECT_NE(&workspace_object<Counted>(), &a);
      EXPECT_EQ(Counted::alive, 2);
    }
    EXPECT_EQ(&workspace_object<Counted>(), &a);
    EXPECT_EQ(a.v.size(), 5u);
  }
  EXPECT_EQ(Counted::alive, 0);
}

// The workers of a region opened on a bound thread take from that workspace, each from its own
// arena; nothing is taken from a thread's fallback.
TEST(Workspace, RegionsCarryTheBindingToTheirWorkers) {
  test::ThreadsGuard threads(2);
  Workspace ws;
  const uint64_t unbound = unbound_workspace_uses();
  std::vector<const void*> got(2, nullptr);
  {
    WorkspaceScope bind(ws);
    parallel_ranges(2, [&](int64_t, int64_t, int w) {
      ScratchFrame f;
      got[w] = f.take<float>(100);
    });
  }
  EXPECT_EQ(unbound_workspace_uses(), unbound);
  EXPECT_NE(got[0], nullptr);
  EXPECT_NE(got[1], nullptr);
  EXPECT_NE(got[0], got[1]);
  const Workspace::Stats s = ws.stats();
  EXPECT_EQ(s.arenas, 2);
  EXPECT_EQ(s.peak, 448u);  // 400 bytes, 64-byte rounded
  {
    ScratchFrame f;  // no workspace bound here: the thread's fallback
    f.take<int>(1);
  }
  EXPECT_EQ(unbound_workspace_uses(), unbound + 1);
}

}  // namespace
}  // namespace fasa
