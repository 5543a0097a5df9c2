// KvTier's background reads (prefetch): one thread per tier, started by the first prefetch(),
// reading one region's rows at a time into that region's entry; read() takes an entry's rows
// (kv_tier.cpp). Entries hold only rows wholly in the file, which no write or flush touches
// while a background read runs (flush waits for the reads to finish, reset drops the entries).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "fasa/attention/kv_tier.h"
#include "fasa/core/workspace.h"

namespace fasa {

struct KvTier::Prefetcher {
  enum class State { kNone, kQueued, kRunning, kDone };
  struct Entry {
    State state = State::kNone;
    std::vector<int32_t> slots;  // [n] ascending
    std::vector<uint8_t> rows;   // [n, row_bytes]
    BackgroundCost cost;         // of the finished read, charged when used or dropped
  };

  // Counts a finished read in the tier's stats (the caller's thread).
  void charge(const Entry& e) const {
    tier.reads_ += e.cost.reads;
    tier.read_bytes_ += e.cost.bytes;
    tier.prefetch_read_bytes_ += e.cost.bytes;
    tier.prefetch_rows_ += e.slots.size();
  }

  explicit Prefetcher(const KvTier& t) : tier(t), entries(t.regions_.size()) {
    thread = std::thread([this] { run(); });
  }
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }

  void run() {
    WorkspaceScope bind(work);
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (stop) return;
      const int r = queue.front();
      queue.pop_front();
      Entry& e = entries[r];
      if (e.state != State::kQueued) continue;  // dropped meanwhile
      e.state = State::kRunning;
      std::vector<int32_t> slots = std::move(e.slots);
      std::vector<uint8_t> rows = std::move(e.rows);
      lock.unlock();
      rows.resize(slots.size() * tier.regions_[r].row_bytes);
      BackgroundCost cost;
      tier.read_rows(r, slots.data(), static_cast<int>(slots.size()), rows.data(), &cost);
      lock.lock();
      e.cost = cost;
      e.slots = std::move(slots);
      e.rows = std::move(rows);
      e.state = State::kDone;
      cv.notify_all();
    }
  }

  const KvTier& tier;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Entry> entries;  // [regions]
  std::deque<int> queue;       // regions to read, in order
  bool stop = false;
  Workspace work;  // the reads' scratch
  std::thread thread;
};

void KvTier::PrefetcherDeleter::operator()(Prefetcher* p) const { delete p; }

void KvTier::prefetch(int r, const int32_t* slots, int n) const {
  const Region& g = regions_[r];
  if (g.row_bytes == 0 || n <= 0) return;
  if (!prefetcher_) prefetcher_.reset(new Prefetcher(*this));
  Prefetcher& p = *prefetcher_;
  std::lock_guard<std::mutex> lock(p.mu);
  Prefetcher::Entry& e = p.entries[r];
  if (e.state == Prefetcher::State::kRunning) return;    // the one in flight stays
  if (e.state == Prefetcher::State::kDone) p.charge(e);  // read but never used
  e.slots.clear();
  for (int j = 0; j < n; ++j) {  // rows wholly in the file and not cached only
    const int32_t s = slots ? slots[j] : j;
    if ((static_cast<uint64_t>(s) + 1) * g.row_bytes <= g.flushed && !cache_.holds(r, s)) {
      e.slots.push_back(s);
    }
  }
  if (e.slots.empty()) {
    e.state = Prefetcher::State::kNone;
    return;
  }
  if (e.state != Prefetcher::State::kQueued) p.queue.push_back(r);
  e.state = Prefetcher::State::kQueued;
  p.cv.notify_all();
}

void KvTier::finish_prefetches() const {
  if (!prefetcher_) return;
  Prefetcher& p = *prefetcher_;
  std::unique_lock<std::mutex> lock(p.mu);
  p.cv.wait(lock, [&] {
    return std::none_of(p.entries.begin(), p.entries.end(), [](const Prefetcher::Entry& e) {
      return e.state == Prefetcher::State::kRunning || e.state == Prefetcher::State::kQueued;
    });
  });
}

void KvTier::drop_prefetches() const {
  if (!prefetcher_) return;
  Prefetcher& p = *prefetcher_;
  std::unique_lock<std::mutex> lock(p.mu);
  p.queue.clear();
  p.cv.wait(lock, [&] {
    return std::none_of(p.entries.begin(), p.entries.end(), [](const Prefetcher::Entry& e) {
      return e.state == Prefetcher::State::kRunning;
    });
  });
  for (Prefetcher::Entry& e : p.entries) {
    if (e.state == Prefetcher::State::kDone) p.charge(e);  // read but never used
    e.state = Prefetcher::State::kNone;
    e.slots.clear();
  }
}

bool KvTier::take_prefetched(int r, const int32_t* slots, int n, uint8_t* dst,
                             std::vector<int32_t>& missing) const {
  if (!prefetcher_) return false;
  Prefetcher& p = *prefetcher_;
  std::unique_lock<std::mutex> lock(p.mu);
  Prefetcher::Entry& e = p.entries[r];
  if (e.state == Prefetcher::State::kNone) return false;
  const auto t0 = std::chrono::steady_clock::now();
  p.cv.wait(lock, [&] { return e.state == Prefetcher::State::kDone; });
  read_ns_ += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  p.charge(e);
  const std::vector<int32_t> have = std::move(e.slots);
  const std::vector<uint8_t> rows = std::move(e.rows);
  e.state = Prefetcher::State::kNone;
  e.slots.clear();
  lock.unlock();
  // Both lists ascending: one merge.
  const size_t rb = regions_[r].row_bytes;
  missing.clear();
  size_t i = 0;
  uint64_t hits = 0;
  for (int j = 0; j < n; ++j) {
    const int32_t s = slots ? slots[j] : j;
    while (i < have.size() && have[i] < s) ++i;
    if (i < have.size() && have[i] == s) {
      std::memcpy(dst + j * rb, rows.data() + i * rb, rb);
      ++hits;
    } else {
      missing.push_back(j);
    }
  }
  prefetch_hits_ += hits;
  row_bytes_ += hits * rb;
  return true;
}

}  // namespace fasa
