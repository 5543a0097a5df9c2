#include "fasa/attention/kv_tier.h"

#include <fcntl.h>
#include <linux/aio_abi.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "fasa/core/error.h"
#include "fasa/core/workspace.h"

namespace fasa {

namespace {

constexpr uint64_t kMaxRunBytes = 4u << 20;  // one read covers at most this much
constexpr uint64_t kMaxGapBytes = 4u << 10;  // rows this close share one read

uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A buffer aligned for direct I/O; grows, never shrinks.
struct AlignedBuf {
  std::unique_ptr<uint8_t, decltype(&std::free)> p{nullptr, &std::free};
  size_t size = 0;
  uint8_t* get(size_t n, size_t align) {
    if (n > size) {
      const size_t sz = round_up(n, align);
      p.reset(static_cast<uint8_t*>(std::aligned_alloc(align, sz)));
      FASA_CHECK(p != nullptr);
      size = sz;
    }
    return p.get();
  }
};

std::mutex g_error_mu;

// Linux native asynchronous I/O (direct I/O only): one context per thread, so a step's reads
// are all in flight together instead of paying the device's latency once per read.
constexpr int kQueueDepth = 64;

struct AioContext {
  aio_context_t ctx = 0;
  bool ok = false;
  AioContext() { ok = ::syscall(SYS_io_setup, kQueueDepth, &ctx) == 0; }
  ~AioContext() {
    if (ok) ::syscall(SYS_io_destroy, ctx);
  }
};

// One read of whole blocks covering rows [j, k) of a selection.
struct Run {
  uint64_t off = 0;  // file offset
  size_t len = 0;
  size_t buf = 0;  // offset in the read buffer
  int j = 0, k = 0;
};

// A selection of one region's rows as read_rows sees them: where row j starts in the region,
// which bytes are in the file (below `flushed`) and which in the RAM tail.
struct Selection {
  const int32_t* slots;  // [n] ascending, or null: row j is slot j
  uint64_t rb;           // row bytes
  uint64_t B;            // block bytes
  uint64_t file_off;     // the region's start in the file
  uint64_t flushed;      // bytes [0, flushed) of the region are in the file
  const uint8_t* tail;   // bytes [flushed, ...) of the region

  uint64_t start_of(int j) const { return static_cast<uint64_t>(slots ? slots[j] : j) * rb; }

  // Plan: rows still in the RAM tail are copied into dst [n, rb] at once; the others are
  // grouped into reads of whole blocks (rows close together share one read, gaps included).
  // Returns the bytes the runs read.
  size_t plan(int n, uint8_t* dst, std::vector<Run>& runs) const {
    runs.clear();
    size_t total = 0;
    for (int j = 0; j < n;) {
      const uint64_t a = start_of(j);
      if (a >= flushed) {
        std::memcpy(dst + j * rb, tail + (a - flushed), rb);
        ++j;
        continue;
      }
      const uint64_t b0 = a / B;
      uint64_t b1 = (std::min(a + rb, flushed) + B - 1) / B;
      int k = j + 1;
      for (; k < n; ++k) {
        const uint64_t a2 = start_of(k);
        if (a2 >= flushed || a2 / B > b1 + kMaxGapBytes / B) break;
        const uint64_t e2 = (std::min(a2 + rb, flushed) + B - 1) / B;
        if ((std::max(b1, e2) - b0) * B > kMaxRunBytes) break;
        b1 = std::max(b1, e2);
      }
      runs.push_back(Run{file_off + b0 * B, (b1 - b0) * B, total, j, k});
      total += (b1 - b0) * B;
      j = k;
    }
    return total;
  }

  // Copies the rows of the runs from the read buffer p into dst [n, rb]; a row's bytes past
  // the file come from the tail.
  void copy_out(const std::vector<Run>& runs, const uint8_t* p, uint8_t* dst) const {
    for (const Run& run : runs) {
      const uint64_t first_byte = run.off - file_off;
      for (int m = run.j; m < run.k; ++m) {
        const uint64_t am = start_of(m);
        const uint64_t in_file = std::min(am + rb, flushed) - am;
        std::memcpy(dst + m * rb, p + run.buf + (am - first_byte), in_file);
        if (in_file < rb) std::memcpy(dst + m * rb + in_file, tail, rb - in_file);
      }
    }
  }
};

// Submits runs[first, first + m) as asynchronous reads into p; returns how many the kernel
// accepted (the first ones).
size_t submit_batch(const AioContext& aio, int fd, const std::vector<Run>& runs, size_t first,
                    size_t m, uint8_t* p, std::vector<iocb>& cbs, std::vector<iocb*>& ptrs) {
  for (size_t i = 0; i < m; ++i) {
    const Run& run = runs[first + i];
    cbs[i] = iocb{};
    cbs[i].aio_lio_opcode = IOCB_CMD_PREAD;
    cbs[i].aio_fildes = static_cast<uint32_t>(fd);
    cbs[i].aio_buf = reinterpret_cast<uint64_t>(p + run.buf);
    cbs[i].aio_nbytes = run.len;
    cbs[i].aio_offset = static_cast<int64_t>(run.off);
    cbs[i].aio_data = first + i;
    ptrs[i] = &cbs[i];
  }
  size_t submitted = 0;
  while (submitted < m) {
    const long rc = ::syscall(SYS_io_submit, aio.ctx, m - submitted, ptrs.data() + submitted);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    submitted += static_cast<size_t>(rc);
  }
  return submitted;
}

// Waits for `submitted` reads; a short or failed one is read again with read_plain(run).
// Returns false (errno set) when waiting itself failed.
template <class ReadPlain>
bool reap_batch(const AioContext& aio, const std::vector<Run>& runs, size_t submitted,
                ReadPlain read_plain) {
  io_event events[kQueueDepth];
  for (size_t done = 0; done < submitted;) {
    const long got = ::syscall(SYS_io_getevents, aio.ctx, 1, submitted - done, events, nullptr);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    for (long e = 0; e < got; ++e) {
      const Run& run = runs[events[e].data];
      if (events[e].res != static_cast<int64_t>(run.len)) read_plain(run);  // retry plainly
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

// Reads every run into p, up to kQueueDepth reads in flight: a run the kernel did not accept,
// or read short, is read with read_plain(run); a failed wait is reported with on_error.
template <class ReadPlain, class OnError>
void read_async(const AioContext& aio, int fd, const std::vector<Run>& runs, uint8_t* p,
                ReadPlain read_plain, OnError on_error) {
  std::vector<iocb> cbs(std::min<size_t>(runs.size(), kQueueDepth));
  std::vector<iocb*> ptrs(cbs.size());
  for (size_t first = 0; first < runs.size(); first += cbs.size()) {
    const size_t m = std::min(cbs.size(), runs.size() - first);
    const size_t submitted = submit_batch(aio, fd, runs, first, m, p, cbs, ptrs);
    for (size_t i = submitted; i < m; ++i) read_plain(runs[first + i]);  // not accepted
    if (!reap_batch(aio, runs, submitted, read_plain)) on_error(std::strerror(errno));
  }
}

// The rows of a selection an earlier source (the row cache, a prefetch) lacked: their slots
// compacted, read with read(slots, m, rows) into one buffer, then copied to their places in dst
// [n, rb] and handed to each(slot, row).  missing: [m] indices j into slots (null: j)
struct MissingRows {
  std::vector<int32_t> slots;  // [m]
  std::vector<uint8_t> rows;   // [m, rb]
};
template <class Read, class Each>
void fill_missing(const int32_t* slots, const std::vector<int32_t>& missing, size_t rb,
                  uint8_t* dst, MissingRows& mr, Read read, Each each) {
  const size_t m = missing.size();
  mr.slots.resize(m);
  for (size_t i = 0; i < m; ++i) mr.slots[i] = slots ? slots[missing[i]] : missing[i];
  mr.rows.resize(m * rb);
  read(mr.slots.data(), static_cast<int>(m), mr.rows.data());
  for (size_t i = 0; i < m; ++i) {
    const uint8_t* row = mr.rows.data() + i * rb;
    std::memcpy(dst + missing[i] * rb, row, rb);
    each(mr.slots[i], row);
  }
}

}  // namespace

TierStats TierStats::operator-(const TierStats& o) const {
  return TierStats{reads - o.reads,
                   read_bytes - o.read_bytes,
                   row_bytes - o.row_bytes,
                   read_ns - o.read_ns,
                   writes - o.writes,
                   write_bytes - o.write_bytes,
                   write_ns - o.write_ns,
                   prefetch_rows - o.prefetch_rows,
                   prefetch_read_bytes - o.prefetch_read_bytes,
                   prefetch_hits - o.prefetch_hits,
                   rows - o.rows,
                   cache_hits - o.cache_hits};
}

KvTier::KvTier(const std::string& dir, const std::vector<size_t>& row_bytes, int capacity,
               int cache_rows)
    : capacity_(capacity), cache_(row_bytes, cache_rows, capacity) {
  struct stat st {};
  if (dir.empty() || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    fail("offload directory '{}' does not exist or is not a directory", dir);
  }
  // An unnamed file: nothing is left behind, whatever happens to the process.
  auto open_tmp = [&](int extra) { return ::open(dir.c_str(), O_TMPFILE | O_RDWR | extra, 0600); };
  fd_ = open_tmp(O_DIRECT);
  direct_ = fd_ >= 0;
  if (fd_ < 0 && errno == EINVAL) fd_ = open_tmp(0);  // no direct I/O here (e.g. tmpfs)
  if (fd_ < 0) {
    fail("cannot create the offloaded KV file in '{}': {}", dir, std::strerror(errno));
  }
  if (direct_) {
    struct statx sx {};
    if (::statx(fd_, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
        (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0 && sx.stx_dio_mem_align > 0) {
      block_ = sx.stx_dio_offset_align;
      mem_align_ = std::max<size_t>(sx.stx_dio_mem_align, 64);
    }
  }
  uint64_t off = 0;
  regions_.resize(row_bytes.size());
  for (size_t r = 0; r < row_bytes.size(); ++r) {
    regions_[r].row_bytes = row_bytes[r];
    regions_[r].file_off = off;
    off += round_up(static_cast<uint64_t>(capacity) * row_bytes[r], block_);
  }
  if (::ftruncate(fd_, static_cast<off_t>(off)) != 0) {
    const int e = errno;
    ::close(fd_);
    fail("cannot size the offloaded KV file in '{}' to {} bytes: {}", dir, off, std::strerror(e));
  }
}

KvTier::~KvTier() {
  prefetcher_.reset();  // joins the background thread before the file goes
  if (fd_ >= 0) ::close(fd_);
}

void KvTier::write(int r, int slot, const void* row) {
  Region& g = regions_[r];
  FASA_DCHECK(slot >= 0 && slot < capacity_ && g.row_bytes > 0);
  const uint64_t a = static_cast<uint64_t>(slot) * g.row_bytes;
  FASA_CHECK(a >= g.flushed);  // flushed rows are final
  const size_t at = a - g.flushed;
  if (g.tail.size() < at + g.row_bytes) g.tail.resize(at + g.row_bytes);
  std::memcpy(g.tail.data() + at, row, g.row_bytes);
}

void KvTier::flush(int n_committed) {
  finish_prefetches();
  struct FlushBuffer {
    AlignedBuf buf;
  };
  auto& buf = workspace_object<FlushBuffer>().buf;
  for (Region& g : regions_) {
    if (g.row_bytes == 0) continue;
    const uint64_t end = static_cast<uint64_t>(n_committed) * g.row_bytes / block_ * block_;
    if (end <= g.flushed) continue;
    const size_t n = end - g.flushed;
    uint8_t* p = buf.get(n, mem_align_);
    std::memcpy(p, g.tail.data(), n);
    const uint64_t t0 = now_ns();
    const off_t at = static_cast<off_t>(g.file_off + g.flushed);
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::pwrite(fd_, p + done, n - done, at + static_cast<off_t>(done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("writing the offloaded KV file failed: {}", std::strerror(errno));
      done += static_cast<size_t>(w);
    }
    if (!direct_) {  // write back, then drop the pages: the tier must not live in RAM
      ::fdatasync(fd_);
      ::posix_fadvise(fd_, at, static_cast<off_t>(n), POSIX_FADV_DONTNEED);
    }
    write_ns_ += now_ns() - t0;
    writes_ += 1;
    write_bytes_ += n;
    g.tail.erase(g.tail.begin(), g.tail.begin() + static_cast<std::ptrdiff_t>(n));
    if (g.tail.capacity() > 4 * block_ + g.tail.size()) g.tail.shrink_to_fit();  // after prefill
    g.flushed = end;
  }
}

void KvTier::record_error(const std::string& what) const {
  std::lock_guard<std::mutex> lock(g_error_mu);
  if (error_.empty()) error_ = what;
}

void KvTier::pread_all(uint8_t* buf, size_t len, uint64_t off) const {
  for (size_t done = 0; done < len;) {
    const ssize_t n = ::pread(fd_, buf + done, len - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Reads run inside parallel loops, so they record the error instead of throwing.
      record_error(n < 0 ? std::strerror(errno) : "unexpected end of file");
      std::memset(buf + done, 0, len - done);
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (!direct_)
    ::posix_fadvise(fd_, static_cast<off_t>(off), static_cast<off_t>(len), POSIX_FADV_DONTNEED);
}

void KvTier::read(int r, const int32_t* slots, int n, uint8_t* dst) const {
  rows_ += static_cast<uint64_t>(n);
  // Every row of the region (prefill's dense reads): nothing a later step would find again.
  if (!cache_.enabled() || slots == nullptr) {
    read_uncached(r, slots, n, dst);
    return;
  }
  struct CacheScratch {
    std::vector<int32_t> missing;  // [m] indices j the cache lacked
    MissingRows rest;
  };
  CacheScratch& sc = workspace_object<CacheScratch>();
  sc.missing.clear();
  cache_hits_ += static_cast<uint64_t>(cache_.lookup(r, slots, n, dst, sc.missing));
  if (sc.missing.empty()) return;
  const Region& g = regions_[r];
  fill_missing(
      slots, sc.missing, g.row_bytes, dst, sc.rest,
      [&](const int32_t* s, int m, uint8_t* rows) { read_uncached(r, s, m, rows); },
      [&](int32_t slot, const uint8_t* row) {
        // Only rows wholly in the file are final; the RAM tail's are at hand anyway.
        if ((static_cast<uint64_t>(slot) + 1) * g.row_bytes <= g.flushed) {
          cache_.insert(r, slot, row);
        }
      });
}

void KvTier::read_uncached(int r, const int32_t* slots, int n, uint8_t* dst) const {
  struct PrefetchScratch {
    std::vector<int32_t> missing;  // [m] indices j the prefetch lacked
    MissingRows rest;
  };
  PrefetchScratch& sc = workspace_object<PrefetchScratch>();
  if (!take_prefetched(r, slots, n, dst, sc.missing)) {
    read_rows(r, slots, n, dst);
    return;
  }
  if (sc.missing.empty()) return;
  fill_missing(
      slots, sc.missing, regions_[r].row_bytes, dst, sc.rest,
      [&](const int32_t* s, int m, uint8_t* rows) { read_rows(r, s, m, rows); },
      [](int32_t, const uint8_t*) {});
}

void KvTier::read_rows(int r, const int32_t* slots, int n, uint8_t* dst, BackgroundCost* bg) const {
  struct ReadBuffers {
    AlignedBuf buf;
    std::vector<Run> runs;
  };
  ReadBuffers& sc = workspace_object<ReadBuffers>();
  auto& buf = sc.buf;
  auto& runs = sc.runs;
  const Region& g = regions_[r];
  const Selection sel{slots, g.row_bytes, block_, g.file_off, g.flushed, g.tail.data()};
  const size_t total = sel.plan(n, dst, runs);
  if (!bg) row_bytes_ += static_cast<uint64_t>(n) * sel.rb;
  if (runs.empty()) return;
  uint8_t* p = buf.get(total, mem_align_);  // [total]: the runs' blocks, back to back
  const uint64_t t0 = now_ns();
  struct AioScratch {
    AioContext aio;
  };
  auto& aio = workspace_object<AioScratch>().aio;
  auto read_plain = [&](const Run& run) { pread_all(p + run.buf, run.len, run.off); };
  if (direct_ && aio.ok && runs.size() > 1) {
    read_async(aio, fd_, runs, p, read_plain, [&](const char* e) { record_error(e); });
  } else {
    for (const Run& run : runs) read_plain(run);
  }
  if (bg) {  // not waited for here; charged when the prefetch is used or dropped
    bg->reads = runs.size();
    bg->bytes = total;
  } else {
    read_ns_ += now_ns() - t0;
    reads_ += runs.size();
    read_bytes_ += total;
  }
  sel.copy_out(runs, p, dst);
}

void KvTier::reset() {
  drop_prefetches();
  cache_.clear();
  for (Region& g : regions_) {
    g.flushed = 0;
    g.tail.clear();
  }
}

void KvTier::check_io() const {
  std::lock_guard<std::mutex> lock(g_error_mu);
  if (!error_.empty()) {
    const std::string e = error_;
    error_.clear();
    fail("reading the offloaded KV file failed: {}", e);
  }
}

uint64_t KvTier::file_bytes() const {
  uint64_t n = 0;
  for (const Region& g : regions_) n += g.flushed;
  return n;
}

uint64_t KvTier::tail_bytes_max() const {
  uint64_t n = 0;
  for (const Region& g : regions_) n += g.row_bytes > 0 ? block_ : 0;
  return n;
}

uint64_t KvTier::ram_tail_bytes() const {
  uint64_t n = 0;
  for (const Region& g : regions_) n += g.tail.size();
  return n;
}

TierStats KvTier::stats() const {
  return TierStats{reads_.load(),
                   read_bytes_.load(),
                   row_bytes_.load(),
                   read_ns_.load(),
                   writes_,
                   write_bytes_,
                   write_ns_,
                   prefetch_rows_.load(),
                   prefetch_read_bytes_.load(),
                   prefetch_hits_.load(),
                   rows_.load(),
                   cache_hits_.load()};
}

}  // namespace fasa
