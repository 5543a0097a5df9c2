// Arenas, workspaces and their binding to threads (workspace.h).
#include "fasa/core/workspace.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#include "fasa/core/error.h"

namespace fasa {

namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

thread_local Workspace* tl_bound = nullptr;
thread_local int tl_arena_index = 0;
std::atomic<uint64_t> g_unbound_uses{0};
std::atomic<int> g_next_object_id{0};

void free_block(std::byte* p) { std::free(p); }

}  // namespace

// ---- Arena ----

void Arena::reserve(size_t bytes) {
  if (depth_ > 0) return;  // blocks in use: the next consolidation sizes the arena
  bytes = round_up(bytes);
  if (!blocks_.empty() && blocks_[0].size >= bytes) return;
  blocks_.clear();
  Block b;
  if (bytes > 0) {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, bytes));
    if (p == nullptr) throw std::bad_alloc();
    b.mem = {p, free_block};
  }
  b.size = bytes;
  blocks_.push_back(std::move(b));
  cur_ = top_ = used_ = 0;
}

void* Arena::take(size_t bytes) {
  bytes = round_up(std::max<size_t>(bytes, 1));
  if (blocks_.empty()) blocks_.emplace_back();  // never reserved: the first take opens a block
  while (top_ + bytes > blocks_[cur_].size) {
    if (cur_ + 1 < blocks_.size()) {  // a later block, opened by an earlier frame
      ++cur_;
      top_ = 0;
      continue;
    }
    const size_t size = std::max(bytes, blocks_[cur_].size);
    Block b;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, size));
    if (p == nullptr) throw std::bad_alloc();
    b.mem = {p, free_block};
    b.size = size;
    blocks_.push_back(std::move(b));
    ++grows_;
    ++cur_;
    top_ = 0;
  }
  void* p = blocks_[cur_].mem.get() + top_;
  top_ += bytes;
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return p;
}

void Arena::close(const Mark& m) {
  cur_ = m.block;
  top_ = m.top;
  used_ = m.used;
  if (--depth_ == 0 && blocks_.size() > 1) consolidate();
}

// One main block of the peak size in place of the main and overflow blocks.
void Arena::consolidate() {
  const size_t peak = peak_;
  blocks_.clear();
  reserve(peak);
}

size_t Arena::reserved() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.size;
  return n;
}

void* Arena::object(int id, void* (*make)(), void (*destroy)(void*)) {
  if (id >= static_cast<int>(objects_.size())) objects_.resize(static_cast<size_t>(id) + 1);
  Object& o = objects_[id];
  if (o.p == nullptr) {
    o.p = make();
    o.destroy = destroy;
  }
  return o.p;
}

Arena::~Arena() {
  for (Object& o : objects_) {
    if (o.p != nullptr) o.destroy(o.p);
  }
}

// ---- Workspace ----

Workspace::Workspace() : arenas_(kMaxArenas) {}
Workspace::~Workspace() = default;
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;

Arena& Workspace::arena(int index) {
  FASA_CHECK(index >= 0 && index < kMaxArenas);
  std::unique_ptr<Arena>& a = arenas_[index];
  if (!a) a = std::make_unique<Arena>();
  return *a;
}

void Workspace::reserve(size_t bytes, int n_workers) {
  for (int w = 0; w < std::min(n_workers, kMaxArenas); ++w) arena(w).reserve(bytes);
}

Workspace::Stats Workspace::stats() const {
  Stats s;
  for (const std::unique_ptr<Arena>& a : arenas_) {
    if (!a) continue;
    ++s.arenas;
    s.reserved += a->reserved();
    s.peak = std::max(s.peak, a->peak());
    s.grows += a->grows();
  }
  return s;
}

// ---- binding ----

WorkspaceScope::WorkspaceScope(Workspace& ws) : outer_(tl_bound) { tl_bound = &ws; }
WorkspaceScope::~WorkspaceScope() { tl_bound = outer_; }

Arena& local_arena() {
  if (tl_bound != nullptr) return tl_bound->arena(tl_arena_index);
  thread_local Workspace fallback;  // see workspace.h: compute outside any owner
  g_unbound_uses.fetch_add(1, std::memory_order_relaxed);
  return fallback.arena(tl_arena_index);
}

uint64_t unbound_workspace_uses() { return g_unbound_uses.load(std::memory_order_relaxed); }

namespace detail {
int next_workspace_object_id() { return g_next_object_id.fetch_add(1); }
Workspace* bound_workspace() { return tl_bound; }
void set_bound_workspace(Workspace* ws) { tl_bound = ws; }
void set_arena_index(int index) { tl_arena_index = index; }
}  // namespace detail

}  // namespace fasa
