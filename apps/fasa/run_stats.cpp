#include "run_stats.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "cli_common.h"
#include "fasa/attention/policy.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa::cli {

namespace {

// The closing lines a user reads first: the share of dense attention's KV bytes the policy
// read per generated token, and the decode speed (without a one-time online calibration, said
// apart); then, for FASA, what its variant saves: FASA-C bandwidth (time), FASA-M RAM.
void print_summary(Session& session, const GenerateResult& r) {
  const AttnStats& st = session.attn_stats();
  const int n_gen = static_cast<int>(r.tokens.size());
  if (st.decode_tokens == 0 || st.dense_bytes == 0 || n_gen == 0) return;
  const std::string name(session.policy().name());
  const OnlineCalibrationInfo* oc = session.facets().online_calibration();
  const double calib_ms = oc && oc->done && !oc->reused ? oc->seconds * 1000.0 : 0.0;
  const std::string after =
      calib_ms > 0.0
          ? fmt::format(" after a one-time online calibration of {:.2f} s", calib_ms / 1000.0)
          : std::string();
  const double tps = n_gen * 1000.0 / std::max(r.decode_ms - calib_ms, 1e-9);
  const std::string per_token = human_bytes(st.bytes_read() / st.decode_tokens);
  const std::string dense = human_bytes(st.dense_bytes / st.decode_tokens);
  if (name == "full") {
    std::fprintf(stderr,
                 "fasa: summary: KV read: %s/token (dense attention); decoding %.1f tokens/s\n",
                 per_token.c_str(), tps);
    return;
  }
  std::fprintf(stderr,
               "fasa: summary: KV read: %.1f%% of dense attention (%s/token instead of %s/token) "
               "with policy %s; decoding %.1f tokens/s%s\n",
               100.0 * st.bytes_read() / st.dense_bytes, per_token.c_str(), dense.c_str(),
               name.c_str(), tps, after.c_str());
  if (name != "fasa") return;
  const KvCache& cache = session.cache();
  if (cache.tiered()) {
    std::fprintf(stderr,
                 "fasa: FASA-M saves RAM: %s of KV in RAM instead of the whole cache's %s; the "
                 "rest is in the file tier (%s on disk), read as rows are selected, which costs "
                 "time\n",
                 human_bytes(session.kv_resident_bytes()).c_str(),
                 human_bytes(cache.used_bytes()).c_str(), human_bytes(cache.file_bytes()).c_str());
  } else {
    std::fprintf(stderr,
                 "fasa: FASA-C saves memory bandwidth (decode time), not RAM: the whole KV cache "
                 "stays in RAM (%s, plus %s of key slices); --variant m (FASA-M) keeps it in a "
                 "file and saves RAM instead\n",
                 human_bytes(cache.ram_bytes()).c_str(),
                 human_bytes(session.policy().resident_bytes()).c_str());
  }
}

// The share of K/V rows the policy read, the bytes per decoded token, and the file tier's reads.
void print_kv_reads(Session& session) {
  const AttnStats& st = session.attn_stats();
  if (st.slots_visible > 0) {
    const AttnShape& sh = session.cache().shape();
    const int n_global = static_cast<int>(sh.global_layers().size());
    if (n_global < sh.n_layers) {  // hybrid: the policy drives the global layers only
      int window = 0;
      for (int l = 0; l < sh.n_layers; ++l) window = std::max(window, sh.window(l));
      std::fprintf(stderr,
                   "fasa: policy %s read %.1f%% of the cached K/V rows of the %d global layers "
                   "at decode steps; the %d sliding-window layers read their window (up to %d "
                   "rows)\n",
                   session.options().policy.c_str(), 100.0 * st.global_read_fraction(), n_global,
                   sh.n_layers - n_global, window);
    } else {
      std::fprintf(stderr, "fasa: policy %s read %.1f%% of the cached K/V rows at decode steps\n",
                   session.options().policy.c_str(), 100.0 * st.slots_read / st.slots_visible);
    }
    const double per_tok = static_cast<double>(st.bytes_read()) / st.decode_tokens;
    const std::string window_part =
        st.window_bytes > 0
            ? ", of which sliding-window layers " + human_bytes(st.window_bytes / st.decode_tokens)
            : std::string();
    std::fprintf(stderr,
                 "fasa: KV bytes read per decoded token %s (selection %s + attention %s%s; dense "
                 "%s); KV resident in RAM: cache %s + policy side data %s\n",
                 human_bytes(static_cast<uint64_t>(per_tok)).c_str(),
                 human_bytes(st.select_bytes / st.decode_tokens).c_str(),
                 human_bytes(st.attend_bytes / st.decode_tokens).c_str(), window_part.c_str(),
                 human_bytes(st.dense_bytes / st.decode_tokens).c_str(),
                 human_bytes(session.cache().ram_bytes()).c_str(),
                 human_bytes(session.policy().resident_bytes()).c_str());
    if (const uint64_t evicted = session.facets().evicted_rows(); evicted > 0) {
      std::fprintf(stderr,
                   "fasa: the policy evicted %llu K/V rows for good; the cache freed %llu of them "
                   "(it frees them in batches)\n",
                   static_cast<unsigned long long>(evicted),
                   static_cast<unsigned long long>(session.cache().freed_rows()));
    }
  }
  if (session.cache().tiered()) {
    const uint64_t toks = std::max<uint64_t>(st.decode_tokens, 1);
    std::fprintf(stderr,
                 "fasa: KV file tier: %s on disk (%s); read per decoded token %s in %.2f ms "
                 "(%.1f reads)\n",
                 human_bytes(session.cache().file_bytes()).c_str(),
                 session.cache().direct_io() ? "direct I/O"
                                             : "buffered I/O, pages dropped after each access",
                 human_bytes(st.tier_read_bytes / toks).c_str(), st.tier_read_ns / 1e6 / toks,
                 static_cast<double>(st.tier_reads) / toks);
  }
}

}  // namespace

// Timing, memory, and what the policy read: to stderr.
void print_run_stats(const Model& model, Session& session, const GenerateResult& r) {
  const int n_gen = static_cast<int>(r.tokens.size());
  std::fprintf(stderr,
               "\nfasa: prompt %d tokens in %.1f ms (%.1f tok/s); generated %d tokens in %.1f ms "
               "(%.1f tok/s); stop: %s\n",
               r.n_prompt, r.prefill_ms,
               r.n_prompt > 0 ? r.n_prompt * 1000.0 / std::max(r.prefill_ms, 1e-9) : 0.0, n_gen,
               r.decode_ms, n_gen > 0 ? n_gen * 1000.0 / std::max(r.decode_ms, 1e-9) : 0.0,
               name(r.stop_reason));
  std::fprintf(stderr,
               "fasa: threads %d; context %d; KV cache %s (%s used of %s); weights %s; peak RSS "
               "%s\n",
               num_threads(), session.n_ctx(), kv_type_name(session.cache().type()),
               human_bytes(session.cache().used_bytes()).c_str(),
               human_bytes(session.cache().capacity_bytes()).c_str(),
               human_bytes(model.weight_bytes()).c_str(), human_bytes(peak_rss_bytes()).c_str());
  if (const std::string by_type = kv_by_layer_type(session.cache()); !by_type.empty()) {
    std::fprintf(stderr, "fasa: KV by layer type: %s\n", by_type.c_str());
  }
  print_kv_reads(session);
  if (const OnlineCalibrationInfo* oc = session.facets().online_calibration()) {
    std::fprintf(stderr, "fasa: %s\n", online_calibration_text(*oc, r.prefill_ms).c_str());
  }
  print_summary(session, r);
}

}  // namespace fasa::cli
