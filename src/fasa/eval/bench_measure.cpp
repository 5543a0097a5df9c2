#include "fasa/eval/bench_measure.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>

#include "fasa/attention/policy.h"
#include "fasa/core/error.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/prompt.h"

namespace fasa {

std::vector<int32_t> bench_tokens(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = u(rng);
  return t;
}

std::vector<int32_t> bench_text_tokens(const Model& model, const std::string& text, int n) {
  const std::vector<int32_t> all = text_prompt_tokens(model, text, false);
  if (all.empty()) fail("--text: the file holds no tokens");
  std::vector<int32_t> out(n);
  for (int i = 0; i < n; ++i) out[i] = all[i % all.size()];
  return out;
}

namespace {

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The context before each measurement: `depth` prefilled tokens or synthetic rows.
void fill_context(Session& s, int depth, bool synthetic, const BenchTokens& tok) {
  if (depth == 0) return;
  if (synthetic) {
    s.fill_synthetic(depth, 1);
  } else {
    s.prefill(std::vector<int32_t>(tok.ctx.begin(), tok.ctx.begin() + depth));
  }
}

// Tokens per second of t.n decode steps with t.batch - 1 more sequences of the same policy
// (so.policy) and depth decoding alongside, one forward pass per step.
double decode_batch_tps(Session& session, const BenchTest& t, int depth, const BenchRig& rig,
                        const SessionOptions& so) {
  std::vector<std::unique_ptr<Session>> mates;
  std::vector<SessionChunk> chunks{{&session, nullptr, 1}};
  for (int b = 1; b < t.batch; ++b) {
    mates.push_back(std::make_unique<Session>(rig.model, so));
    fill_context(*mates.back(), depth, rig.synthetic, rig.tok);
    chunks.push_back({mates.back().get(), nullptr, 1});
  }
  ForwardScratch scratch;
  return static_cast<double>(t.n) * t.batch / seconds_of([&] {
           for (int i = 0; i < t.n; ++i) {
             for (SessionChunk& c : chunks) c.tokens = &rig.tok.tg[i];
             Session::forward_many(chunks, scratch);
           }
         });
}

// Tokens per second of t.n decode steps: the session alone, or batched (decode_batch_tps).
double decode_tps(Session& session, const BenchTest& t, int depth, const BenchRig& rig,
                  const SessionOptions& so) {
  if (t.batch > 1) return decode_batch_tps(session, t, depth, rig, so);
  return t.n / seconds_of([&] {
           for (int i = 0; i < t.n; ++i) session.decode(rig.tok.tg[i]);
         });
}

// lossless: t.n tokens generated greedily from the context's last logits; `full` plainly, any
// other policy drafting and verifying. Tokens per second; the tokens and counts go to m.
double lossless_tps(Session& session, const BenchTest& t, const LosslessOptions& lo,
                    BenchMeasure& m) {
  GenerateOptions go;
  go.n_predict = t.n;
  go.sampler.temp = 0.0f;
  go.stop_at_eog = false;
  const bool plain = session.policy().name() == "full";
  m.lossless = LosslessStats{};
  GenerateResult r;
  const double s = seconds_of([&] {
    r = plain ? generate_from_prefilled(session, go, nullptr)
              : generate_lossless(session, go, lo, nullptr, &m.lossless);
  });
  m.generated = r.tokens;
  return t.n / s;
}

// The counters of a tg test's last repetition: what attention read, the file tier's reads, and
// what the cache and the policy hold.
void read_decode_counters(const Session& session, BenchMeasure& m) {
  const AttnStats& st = session.attn_stats();
  const double toks = static_cast<double>(std::max<uint64_t>(st.decode_tokens, 1));
  m.kv_read_per_token =
      m.lossless.tokens > 0 ? m.lossless.kv_bytes_per_token() : st.bytes_read() / toks;
  m.dense_read_per_token = st.dense_bytes / toks;
  m.disk_read_per_token = st.tier_read_bytes / toks;
  m.disk_ms_per_token = st.tier_read_ns / 1e6 / toks;
  m.prefetch_read_per_token = st.tier_prefetch_bytes / toks;
  m.dense_fallback_share =
      st.decode_steps > 0 ? static_cast<double>(st.dense_fallbacks) / st.decode_steps : 0.0;
  m.prefetch_hit_share = st.tier_prefetch_rows > 0
                             ? static_cast<double>(st.tier_prefetch_hits) / st.tier_prefetch_rows
                             : 0.0;
  m.tier_rows_per_token = st.tier_rows / toks;
  m.tier_reads_per_token = st.tier_reads / toks;
  m.tier_cache_hit_share =
      st.tier_rows > 0 ? static_cast<double>(st.tier_cache_hits) / st.tier_rows : 0.0;
  m.kv_ram = session.cache().ram_bytes() + session.policy().resident_bytes();
  m.kv_file = session.cache().file_bytes();
  m.kv_global = session.cache().used_bytes_of(false);
  m.kv_window = session.cache().used_bytes_of(true);
}

// One repetition of a tg test under the policy specs[p] of `session`: its tokens/s go to m.
void measure_decode(Session& session, size_t p, const BenchTest& t, int depth, double fill_s,
                    const BenchRig& rig, BenchMeasure& m) {
  SessionOptions so = rig.so;
  so.policy = rig.specs[p];
  double tps = rig.lossless.k > 0 ? lossless_tps(session, t, rig.lossless, m)
                                  : decode_tps(session, t, depth, rig, so);
  m.calib_s = -1.0;
  const OnlineCalibrationInfo* oc = session.facets().online_calibration();
  if (oc && oc->done && !oc->reused && t.batch == 1) {  // a one-time cost, reported apart
    m.calib_s = oc->seconds;
    m.fill_s = fill_s;
    tps = t.n / std::max(t.n / tps - oc->seconds, 1e-9);
  }
  m.tps.push_back(tps);
}

}  // namespace

void bench_warm_up(const BenchRig& rig) {
  const int n_warm = std::min(32, rig.so.n_ctx - 1);
  const std::vector<int32_t> warm =
      bench_tokens(std::max(n_warm, 1), rig.model->config().n_vocab, 4);
  for (const auto& s : rig.sessions) {
    if (n_warm > 0) s->prefill(std::vector<int32_t>(warm.begin(), warm.begin() + n_warm));
    s->decode(warm[0]);
    s->reset();
  }
}

std::vector<BenchMeasure> measure_bench_test(const BenchRig& rig, const BenchTest& t, int depth,
                                             int reps) {
  std::vector<BenchMeasure> group;
  for (const std::string& spec : rig.specs) {
    BenchMeasure m;
    m.policy = spec;
    m.test = t;
    m.depth = depth;
    group.push_back(m);
  }
  const std::vector<int32_t> pp(rig.tok.pp.begin(), rig.tok.pp.begin() + (t.gen ? 0 : t.n));
  for (int r = 0; r < reps; ++r) {
    for (size_t p = 0; p < rig.specs.size(); ++p) {
      Session& session = *rig.sessions[p];
      BenchMeasure& m = group[p];
      session.reset();
      const double fill_s =
          seconds_of([&] { fill_context(session, depth, rig.synthetic, rig.tok); });
      const ParallelStats par0 = parallel_stats();
      if (!t.gen) {
        m.tps.push_back(t.n / seconds_of([&] { session.prefill(pp); }));
        m.par = parallel_stats() - par0;
        continue;
      }
      measure_decode(session, p, t, depth, fill_s, rig, m);
      m.par = parallel_stats() - par0;
      read_decode_counters(session, m);
    }
  }
  for (const BenchMeasure& full : group) {  // lossless: every policy's tokens are full's
    if (full.policy != "full") continue;
    for (BenchMeasure& m : group) m.same_as_first = m.generated == full.generated;
  }
  return group;
}

}  // namespace fasa
