#include "chat_stats.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "fasa/core/memory.h"
#include "fasa/core/process.h"

namespace fasa::cli {
namespace {

double per_s(int n, double ms) { return n > 0 ? n * 1000.0 / std::max(ms, 1e-9) : 0.0; }

// "; KV read 21.0% of dense" for a sparse policy's decode steps, "" otherwise.
std::string kv_part(const AttnStats& a, const Session& s) {
  if (std::string_view(s.policy().name()) == "full" || a.dense_bytes == 0) return {};
  return fmt::format("; KV read {:.1f}% of dense", 100.0 * a.bytes_read() / a.dense_bytes);
}

}  // namespace

void ChatTotals::add(const TurnStats& t) {
  ++answers;
  sum.n_prefill += t.n_prefill;
  sum.prefill_ms += t.prefill_ms;
  sum.n_gen += t.n_gen;
  sum.decode_ms += t.decode_ms;
  sum.attn += t.attn;
}

std::string turn_line(const TurnStats& t, const Session& s, StopReason why, int n_predict) {
  std::string stop;
  if (why == StopReason::Done) stop = "; stopped (Ctrl-C)";
  if (why == StopReason::Length) stop = fmt::format("; stopped at -n {}", n_predict);
  if (why == StopReason::Stop) stop = "; stopped at a --stop string";
  if (why == StopReason::Context) stop = "; stopped: the context is full";
  return fmt::
      format("fasa: {} tokens, {:.1f} t/s; prefill {} tokens, {:.1f} t/s; context {}/{}{}{}",
             t.n_gen, per_s(t.n_gen, t.decode_ms), t.n_prefill, per_s(t.n_prefill, t.prefill_ms),
             s.n_past(), s.n_ctx(), kv_part(t.attn, s), stop);
}

std::string totals_text(const ChatTotals& t, const Session& s) {
  const TurnStats& a = t.sum;
  return fmt::format(
      "fasa: session: {} answers; prefill {} tokens in {:.2f} s ({:.1f} t/s); generated {} "
      "tokens in {:.2f} s ({:.1f} t/s){}\n"
      "fasa: context {} of {} tokens; KV cache {} used of {}; policy {}; peak RSS {}\n",
      t.answers, a.n_prefill, a.prefill_ms / 1000.0, per_s(a.n_prefill, a.prefill_ms), a.n_gen,
      a.decode_ms / 1000.0, per_s(a.n_gen, a.decode_ms), kv_part(a.attn, s), s.n_past(), s.n_ctx(),
      human_bytes(s.cache().used_bytes()), human_bytes(s.cache().capacity_bytes()),
      s.options().policy, human_bytes(peak_rss_bytes()));
}

}  // namespace fasa::cli
