// Scratch memory owned by whoever runs the compute (a Session owns one in its ForwardScratch),
// not hidden in per-thread buffers that grow and live as long as the process.
//
// A Workspace holds one Arena per pool thread (core/thread_pool.h: the caller is 0, pool worker w
// is w). Code takes memory in two ways, always from the arena of the thread it runs on in the
// workspace bound there (WorkspaceScope; a parallel region's workers see their caller's):
// - ScratchFrame: stack-ordered spans for one call (a kernel's tiles, a job's query pointers),
//   given back when the frame ends. An arena is one block reserved up front (Workspace::reserve,
//   sized from the model and context); a take that does not fit opens an overflow block, and once
//   the arena's last frame has closed it becomes one block of the peak size (Stats::grows counts
//   these), so a steady state allocates nothing.
// - workspace_object<T>(): one T per arena, made on first use and destroyed with the workspace,
//   for structured scratch that keeps its capacity across calls (a layer's per-head selections).
// Compute on a thread with no workspace bound (unit tests calling a kernel, tools) uses a
// per-thread fallback; unbound_workspace_uses() counts those frames and objects, so a test can
// check that a session's steps draw only from the session's workspace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace fasa {

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  struct Mark {
    size_t block = 0;  // index into blocks_
    size_t top = 0;    // bytes used in that block
    size_t used = 0;   // bytes used in all blocks
  };
  // Makes the main block at least `bytes` (a no-op while a frame is open).
  void reserve(size_t bytes);
  void* take(size_t bytes);  // 64-byte aligned
  Mark mark() const { return {cur_, top_, used_}; }
  void open() { ++depth_; }
  void close(const Mark& m);

  size_t reserved() const;  // bytes held in blocks
  size_t peak() const { return peak_; }
  uint64_t grows() const { return grows_; }

  // Per-type objects (workspace_object).
  void* object(int id, void* (*make)(), void (*destroy)(void*));
  ~Arena();

 private:
  struct Block {
    std::unique_ptr<std::byte[], void (*)(std::byte*)> mem{nullptr, nullptr};
    size_t size = 0;
  };
  void consolidate();

  std::vector<Block> blocks_;  // [0] main, then overflow blocks in the order they were opened
  size_t cur_ = 0;             // the block takes come from
  size_t top_ = 0;             // bytes used in it
  size_t used_ = 0;            // bytes used in all blocks (the frames' sum)
  size_t peak_ = 0;            // the most `used_` has been
  int depth_ = 0;              // open frames
  uint64_t grows_ = 0;
  struct Object {
    void* p = nullptr;
    void (*destroy)(void*) = nullptr;
  };
  std::vector<Object> objects_;  // [object id]
};

class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;

  // Makes each arena's main block (the caller's and n_workers - 1 workers') at least `bytes`.
  void reserve(size_t bytes, int n_workers);

  struct Stats {
    size_t reserved = 0;  // bytes held by all arenas' blocks
    size_t peak = 0;      // the largest arena's peak use
    uint64_t grows = 0;   // overflow blocks opened (a reservation that was too small)
    int arenas = 0;       // arenas made (threads that have run work here)
  };
  Stats stats() const;

  Arena& arena(int index);  // made on first use
  static constexpr int kMaxArenas = 256;

 private:
  std::vector<std::unique_ptr<Arena>> arenas_;  // [kMaxArenas]
};

// Binds `ws` to this thread (and to the workers of the parallel regions it opens) until the
// scope ends; scopes nest. A workspace is bound by one thread at a time.
class WorkspaceScope {
 public:
  explicit WorkspaceScope(Workspace& ws);
  ~WorkspaceScope();
  WorkspaceScope(const WorkspaceScope&) = delete;
  WorkspaceScope& operator=(const WorkspaceScope&) = delete;

 private:
  Workspace* outer_;
};

// This thread's arena in its bound workspace (or its fallback).
Arena& local_arena();
// Frames and objects taken on threads with no workspace bound, since the process started.
uint64_t unbound_workspace_uses();

// Spans for one call, given back in stack order when the frame ends.
class ScratchFrame {
 public:
  ScratchFrame() : arena_(local_arena()), mark_(arena_.mark()) { arena_.open(); }
  ~ScratchFrame() { arena_.close(mark_); }
  ScratchFrame(const ScratchFrame&) = delete;
  ScratchFrame& operator=(const ScratchFrame&) = delete;

  // n uninitialized elements, 64-byte aligned.
  template <typename T>
  T* take(size_t n) {
    static_assert(std::is_trivially_destructible_v<T> && std::is_trivially_copyable_v<T>,
                  "frames hold plain data");
    return static_cast<T*>(arena_.take(n * sizeof(T)));
  }

 private:
  Arena& arena_;
  Arena::Mark mark_;
};

namespace detail {
int next_workspace_object_id();
template <typename T>
int workspace_object_id() {
  static const int id = next_workspace_object_id();
  return id;
}
}  // namespace detail

// This thread's T in its bound workspace, value-initialized on first use.
template <typename T>
T& workspace_object() {
  void* p = local_arena().object(
      detail::workspace_object_id<T>(), [] { return static_cast<void*>(new T()); },
      [](void* q) { delete static_cast<T*>(q); });
  return *static_cast<T*>(p);
}

namespace detail {
// Internal to thread_pool.cpp: the workspace bound on this thread (null: none), and this
// thread's arena index (0, or the pool worker's number).
Workspace* bound_workspace();
void set_bound_workspace(Workspace* ws);
void set_arena_index(int index);
}  // namespace detail

}  // namespace fasa
