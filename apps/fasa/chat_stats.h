// What `fasa chat` says after each answer (one line) and on /stats (the session's totals).
#pragma once

#include <string>

#include "fasa/attention/attention.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"

namespace fasa::cli {

// One turn: the tokens it appended before the answer and the answer's.
struct TurnStats {
  int n_prefill = 0;
  double prefill_ms = 0.0;
  int n_gen = 0;
  double decode_ms = 0.0;
  AttnStats attn;  // what the turn's decode steps read
};

struct ChatTotals {
  int answers = 0;
  TurnStats sum;
  void add(const TurnStats& t);
};

// "fasa: 42 tokens, 55.1 t/s; prefill 15 tokens, 350.2 t/s; context 123/4096; KV read 21.0% of
// dense" (the KV part for a policy other than full), then why the answer stopped when it was not
// the end of the turn.
std::string turn_line(const TurnStats& t, const Session& s, StopReason why, int n_predict);

// The totals (several lines, each "fasa: ...").
std::string totals_text(const ChatTotals& t, const Session& s);

}  // namespace fasa::cli
