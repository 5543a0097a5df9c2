#include "fasa/eval/bench_report.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "fasa/core/amx.h"
#include "fasa/core/isa.h"
#include "fasa/core/memory.h"
#include "fasa/core/parallel.h"
#include "fasa/eval/roofline.h"
#include "fasa/io/gguf.h"

namespace fasa {

namespace {

using nlohmann::ordered_json;

// The bandwidth roofline of a tg row: every weight is read once per token, plus the KV bytes
// that this policy's attention read.
Roofline roofline_of(const BenchMeasure& m, uint64_t weight_bytes, double read_gb_s) {
  return bandwidth_roofline(weight_bytes, m.kv_read_per_token, read_gb_s, m.mean());
}

// Threads (last repetition): parallel dispatches (pool wake-ups; a decode step is one team) and
// barriers (points where the workers wait for each other) per token, the share of thread time
// spent waiting inside the regions, and the share of the run's time inside them at all (the rest
// ran on one thread).
void add_parallel_fields(ordered_json& j, const BenchMeasure& m) {
  const double n_tok = static_cast<double>(m.test.n) * m.test.batch;
  const double run_s = m.tps.empty() ? 0.0 : n_tok / m.tps.back();
  j["parallel_dispatches_per_token"] = static_cast<double>(m.par.dispatches) / n_tok;
  j["parallel_barriers_per_token"] = static_cast<double>(m.par.barriers) / n_tok;
  j["parallel_wait_share"] = m.par.wait_share();
  j["parallel_wall_share"] = run_s > 0.0 ? m.par.wall_s / run_s : 0.0;
}

// A tg row's KV accounting: bytes read, resident and on disk, the file tier's reads.
void add_kv_fields(ordered_json& j, const BenchMeasure& m) {
  j["kv_bytes_read_per_token"] = m.kv_read_per_token;
  j["dense_kv_bytes_read_per_token"] = m.dense_read_per_token;
  j["kv_resident_ram_bytes"] = m.kv_ram;
  j["kv_resident_file_bytes"] = m.kv_file;
  j["kv_global_layers_bytes"] = m.kv_global;
  j["kv_window_layers_bytes"] = m.kv_window;
  j["disk_bytes_read_per_token"] = m.disk_read_per_token;
  j["disk_read_ms_per_token"] = m.disk_ms_per_token;
  j["disk_prefetch_bytes_per_token"] = m.prefetch_read_per_token;
  j["disk_prefetch_hit_share"] = m.prefetch_hit_share;
  j["tier_rows_per_token"] = m.tier_rows_per_token;
  j["tier_reads_per_token"] = m.tier_reads_per_token;
  j["tier_row_cache_hit_share"] = m.tier_cache_hit_share;
  j["dense_fallback_share"] = m.dense_fallback_share;
}

// A tg row's online calibration and lossless decoding.
void add_decoder_fields(ordered_json& j, const BenchMeasure& m, const std::string& lossless) {
  if (m.calib_s >= 0.0) {
    j["online_calibration_s"] = m.calib_s;
    j["depth_prefill_s"] = m.fill_s;
    j["online_calibration_share_of_prefill"] = m.fill_s > 0.0 ? m.calib_s / m.fill_s : 0.0;
  }
  j["lossless"] = lossless;
  if (m.lossless.tokens > 0) {
    j["lossless_acceptance"] = m.lossless.acceptance();
    j["lossless_tokens_per_verification"] = m.lossless.tokens_per_verification();
    j["lossless_verifications"] = m.lossless.verifications;
    j["lossless_drafted"] = m.lossless.drafted;
    j["lossless_draft_ms"] = m.lossless.draft_ms;    // the drafts' decode steps, in all
    j["lossless_verify_ms"] = m.lossless.verify_ms;  // the verifications, in all
  }
  if (!m.generated.empty()) j["same_tokens_as_full"] = m.same_as_first;
}

}  // namespace

BenchReport::BenchReport(RowFormat format, const Model& model, const BenchSettings& settings,
                         const BandwidthResult& bw, BenchProvenance provenance, std::FILE* out)
    : format_(format),
      model_(model),
      s_(settings),
      bw_(bw),
      provenance_(std::move(provenance)),
      out_(out),
      writer_(format, out) {}

void BenchReport::header() {
  if (format_ != RowFormat::Markdown) return;  // every JSON row carries its own context
  const ModelConfig& c = model_.config();
  std::fprintf(out_, "model %s (%s), %d threads, KV %s, kernels %s, AMX %s, repack %s",
               c.name.empty() ? c.arch.c_str() : c.name.c_str(),
               human_bytes(model_.weight_bytes()).c_str(), num_threads(), s_.kv_type.c_str(),
               isa_name(active_isa()), amx_status().c_str(), model_.repack_status().c_str());
  if (s_.bandwidth) {
    std::fprintf(out_, ", read bandwidth %.2f GB/s (%s buffer)", bw_.read_gb_s,
                 human_bytes(bw_.bytes).c_str());
  }
  if (s_.depth_fill == "synthetic") {
    std::fprintf(out_, ", depth fill synthetic (random K/V rows: speed only)");
  }
  if (s_.prefill_chunk > 0) std::fprintf(out_, ", prefill chunk %d", s_.prefill_chunk);
  std::fprintf(out_, "\n\n");
  std::fprintf(out_,
               "| policy | test | t/s | vs first | KV read/token | KV in RAM | KV on disk | "
               "disk read/token |%s\n",
               s_.bandwidth ? " bound t/s | roofline |" : "");
  std::fprintf(out_, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |%s\n",
               s_.bandwidth ? " ---: | ---: |" : "");
}

void BenchReport::next_run(const BandwidthResult& bw) {
  bw_ = bw;
  if (format_ != RowFormat::Markdown) return;
  std::fprintf(out_, "\n");
  header();
}

void BenchReport::rows(const std::vector<BenchMeasure>& group) {
  for (const BenchMeasure& m : group) {
    if (format_ != RowFormat::Markdown) {
      writer_.add(json_row(m));
    } else {
      markdown_row(m, group.front());
    }
  }
  std::fflush(out_);
}

void BenchReport::finish() {
  if (format_ != RowFormat::Markdown) writer_.finish();
}

ordered_json BenchReport::json_row(const BenchMeasure& m) const {
  ordered_json j = {{"model", model_.file().path()},
                    {"model_bytes", model_.weight_bytes()},
                    {"threads", num_threads()},
                    {"isa", isa_name(active_isa())},
                    {"amx", amx_status()},
                    {"repack", model_.repack_status()},
                    {"warmup", s_.warmup},
                    {"kv_type", s_.kv_type},
                    {"reps", s_.reps}};
  if (s_.bandwidth) j["read_bandwidth_gb_s"] = bw_.read_gb_s;
  j["policy"] = m.policy;
  if (provenance_) provenance_(j, m.policy);
  j["test"] = m.test.name();
  j["batch"] = m.test.batch;
  j["depth"] = m.depth;
  j["depth_fill"] = s_.depth_fill;
  if (s_.prefill_chunk > 0) j["prefill_chunk"] = s_.prefill_chunk;
  j["n_tokens"] = m.test.n;
  j["tokens_per_s"] = m.mean();
  j["stddev"] = m.stddev();
  j["samples"] = m.tps;
  add_parallel_fields(j, m);
  if (!m.test.gen) return j;
  add_kv_fields(j, m);
  add_decoder_fields(j, m, s_.lossless);
  if (s_.bandwidth) {
    const Roofline r = roofline_of(m, model_.weight_bytes(), bw_.read_gb_s);
    j["bytes_per_token"] = r.bytes_per_token;
    j["roofline_tokens_per_s"] = r.tokens_per_s;
    j["roofline_fraction"] = r.fraction;
  }
  return j;
}

namespace {

// The policy cell: the spec, with what lossless decoding and an online calibration did.
std::string policy_cell(const BenchMeasure& m, const std::string& lossless) {
  std::string policy = m.policy;
  if (m.lossless.tokens > 0) {
    policy +=
        fmt::format(" (lossless {}: acceptance {:.1f}%, {:.2f} tokens/verification)", lossless,
                    100.0 * m.lossless.acceptance(), m.lossless.tokens_per_verification());
  }
  if (!m.same_as_first) policy += " **tokens differ from full's**";
  if (m.calib_s >= 0.0) {
    policy +=
        fmt::format(" (online calibration {:.3f} s = {:.1f}% of the depth's prefill, {:.2f} s)",
                    m.calib_s, 100.0 * m.calib_s / std::max(m.fill_s, 1e-12), m.fill_s);
  }
  return policy;
}

}  // namespace

void BenchReport::markdown_row(const BenchMeasure& m, const BenchMeasure& base) const {
  const std::string name = m.test.name();
  const std::string test = m.depth > 0 ? fmt::format("{} @ d{}", name, m.depth) : name;
  const bool tg = m.test.gen;
  auto bytes = [&](double b) { return tg ? human_bytes(static_cast<uint64_t>(b)) : std::string(); };
  const std::string disk =
      tg && m.kv_file > 0
          ? fmt::format("{} in {:.2f} ms ({:.0f}% of rows from RAM)", bytes(m.disk_read_per_token),
                        m.disk_ms_per_token, 100.0 * m.tier_cache_hit_share)
          : std::string();
  std::string roof;
  if (s_.bandwidth) {
    const Roofline r = roofline_of(m, model_.weight_bytes(), bw_.read_gb_s);
    roof = tg ? fmt::format(" {:.2f} | {:.1f}% |", r.tokens_per_s, 100.0 * r.fraction)
              : std::string("  |  |");
  }
  std::string ram = bytes(static_cast<double>(m.kv_ram));
  if (tg && m.kv_window > 0) {
    // A hybrid stack: split the RAM by layer type. The sliding-window rings are always whole in
    // RAM; the rest is the global layers' (their cache rows kept in RAM and the policy's side
    // data: all of it for FASA-C, only the packed key slices for FASA-M).
    const uint64_t global_ram = m.kv_ram > m.kv_window ? m.kv_ram - m.kv_window : 0;
    ram += fmt::format(" (global {}, window {})", bytes(static_cast<double>(global_ram)),
                       bytes(static_cast<double>(m.kv_window)));
  }
  const std::string policy = policy_cell(m, s_.lossless);
  std::fprintf(out_, "| %s | %s | %.2f ± %.2f | %.2f | %s | %s | %s | %s |%s\n", policy.c_str(),
               test.c_str(), m.mean(), m.stddev(), m.mean() / std::max(base.mean(), 1e-12),
               bytes(m.kv_read_per_token).c_str(), ram.c_str(),
               tg && m.kv_file > 0 ? bytes(static_cast<double>(m.kv_file)).c_str() : "",
               disk.c_str(), roof.c_str());
}

ordered_json bandwidth_json(const BandwidthResult& bw) {
  return {{"read_bandwidth_gb_s", bw.read_gb_s}, {"threads", bw.threads}, {"bytes", bw.bytes}};
}

void print_bandwidth_only(RowFormat format, const BandwidthResult& bw, std::FILE* out) {
  if (format != RowFormat::Markdown) {
    RowWriter w(format, out);
    w.add(bandwidth_json(bw));
    w.finish();
    return;
  }
  std::fprintf(out, "read bandwidth: %.2f GB/s (%d thread%s, %s buffer, best of %d passes)\n",
               bw.read_gb_s, bw.threads, bw.threads == 1 ? "" : "s", human_bytes(bw.bytes).c_str(),
               kBenchBandwidthPasses);
}

}  // namespace fasa
