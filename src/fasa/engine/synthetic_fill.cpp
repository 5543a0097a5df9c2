// Session::fill_synthetic: random K/V rows through the forward pass's store/on_append/commit
// path (see session.h), for speed measurements at depth without the prefill's cost.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/splitmix.h"
#include "fasa/core/workspace.h"
#include "fasa/engine/session.h"

namespace fasa {

namespace {

// n values of about N(0, 1) (Irwin-Hall of 4 uniforms) from the generator state `s`.
void random_row(uint64_t& s, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t r = s * 0x2545f4914f6cdd1dull;
    float sum = 0.0f;
    for (int j = 0; j < 4; ++j) sum += static_cast<float>((r >> (16 * j)) & 0xffff) / 65536.0f;
    out[i] = (sum - 2.0f) * 1.7320508f;
  }
}

}  // namespace

void Session::fill_synthetic(int n, uint64_t seed) {
  if (n < 1) fail("synthetic fill: token count must be >= 1 (got {})", n);
  if (n_past() + static_cast<int64_t>(n) > n_ctx()) {
    fail("context overflow: {} tokens in the cache + {} synthetic > context size {}", n_past(), n,
         n_ctx());
  }
  if (facets_.needs_prefill_queries()) {
    fail(
        "policy '{}' learns from the prefill queries, which a synthetic fill does not make: "
        "fill the context with a real prefill",
        active_policy_->name());
  }
  WorkspaceScope bind(scratch_.work);
  const int hd = shape_.head_dim, n_kv = shape_.n_kv_heads, n_layers = shape_.n_layers;
  const int chunk = std::max(opts_.prefill_chunk, 1);
  std::vector<int32_t> pos;
  for (int done = 0; done < n;) {
    const int m = std::min(chunk, n - done);
    const int first_slot = n_past();
    // Stores of different (layer, kv head) touch different rows; a tiered cache's file writes
    // stay on one thread.
    auto store_head = [&](int64_t job) {
      const int l = static_cast<int>(job / n_kv), g = static_cast<int>(job % n_kv);
      std::vector<float> k(hd), v(hd);  // [head_dim] each
      uint64_t s =
          splitmix64_mix(seed ^ splitmix64_mix(static_cast<uint64_t>(job) << 32 ^ first_slot)) | 1;
      for (int t = 0; t < m; ++t) {
        random_row(s, k.data(), hd);
        random_row(s, v.data(), hd);
        cache_.store(l, g, first_slot + t, k.data(), v.data());
      }
    };
    const int64_t jobs = static_cast<int64_t>(n_layers) * n_kv;
    if (cache_.tiered()) {
      for (int64_t j = 0; j < jobs; ++j) store_head(j);
    } else {
      parallel_for(jobs, store_head);
    }
    for (int l : shape_.global_layers()) active_policy_->on_append(cache_, l, first_slot, m);
    pos.resize(m);
    for (int i = 0; i < m; ++i) pos[i] = first_slot + i;
    cache_.commit(m, pos.data());
    done += m;
  }
}

}  // namespace fasa
