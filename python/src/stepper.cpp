#include "stepper.h"

#include <algorithm>
#include <chrono>

#include <pybind11/stl.h>

#include "fasa/core/error.h"

namespace fasa::py {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Stepper::Stepper(PySession& s, std::vector<int32_t> prompt, const GenerateOptions& go,
                 const LosslessOptions& lo)
    : s_(s), prompt_(std::move(prompt)), go_(go), lo_(lo), base_(s.ids.size()) {
  go_.sampler.validate();
  if (lo_.k > 0 && go_.rules.any()) {
    fail("lossless decoding cannot be combined with penalties or logit_bias");
  }
  if (go_.rules.repetition_penalty != 1.0f) {  // the context: what the session holds, the prompt
    go_.rules.prompt = s.ids;
    go_.rules.prompt.insert(go_.rules.prompt.end(), prompt_.begin(), prompt_.end());
  }
}

bool Stepper::done() const { return started_ && generation().done(); }

const Generation& Stepper::generation() const { return lgen_ ? lgen_->generation() : *gen_; }

void Stepper::prefill() {
  attn0_ = s_.session->attn_stats();
  // The engine's checks and messages (an empty prompt, one that does not fit), then the prefill.
  const GenerateResult p = prefill_then(*s_.session, prompt_, go_, [] { return GenerateResult{}; });
  r_.n_prompt = p.n_prompt;
  r_.prefill_ms = p.prefill_ms;
  prefilled_ = true;
  if (lo_.k > 0) {
    lgen_ = std::make_unique<LosslessGeneration>(*s_.session, go_, lo_);
  } else {
    gen_ = std::make_unique<Generation>(s_.model->model->require_tokenizer(), go_);
  }
}

std::string Stepper::next_piece() {
  Session& s = *s_.session;
  if (lgen_) {
    if (!started_) {
      started_ = true;
      return lgen_->start();
    }
    const int n0 = s.n_past();
    try {
      return lgen_->cycle();
    } catch (...) {
      if (s.n_past() > n0) s.rollback();  // drafts cut short: back to the cycle's save point
      throw;
    }
  }
  if (started_) s.decode(gen_->next_token());  // the token sampled by the previous step
  started_ = true;
  return gen_->step(s.last_logits().data(), s_.model->model->config().n_vocab,
                    s.n_past() < s.n_ctx());
}

std::string Stepper::step() {
  FASA_CHECK(!failed_ && !done());
  try {
    if (!prefilled_) prefill();
    const auto t0 = std::chrono::steady_clock::now();
    std::string piece = next_piece();
    r_.decode_ms += ms_since(t0);
    sync_ids();
    return piece;
  } catch (...) {
    failed_ = true;
    sync_ids();
    throw;
  }
}

void Stepper::sync_ids() {
  // The cache holds the prompt, then the generated tokens but (plain decoding) the last sampled.
  const size_t held = static_cast<size_t>(s_.session->n_past()) - base_;
  std::vector<int32_t>& ids = s_.ids;
  ids.resize(base_);
  ids.insert(ids.end(), prompt_.begin(), prompt_.begin() + std::min(held, prompt_.size()));
  if (held > prompt_.size() && started_) {
    const std::vector<int32_t>& gen = generation().tokens();
    FASA_CHECK(held - prompt_.size() <= gen.size());
    ids.insert(ids.end(), gen.begin(), gen.begin() + (held - prompt_.size()));
  }
  FASA_CHECK(ids.size() == static_cast<size_t>(s_.session->n_past()));
}

GenerateOutcome Stepper::outcome() const {
  GenerateOutcome o;
  o.result = r_;
  if (started_) {
    o.result.tokens = generation().tokens();
    o.result.text = generation().text();
    o.result.stop_reason = generation().stop_reason();
  }
  if (prefilled_) o.attn = s_.session->attn_stats() - attn0_;
  o.lossless = lo_.k > 0;
  if (lgen_) o.lossless_stats = lgen_->stats();
  return o;
}

pb::dict outcome_dict(const GenerateOutcome& o) {
  const GenerateResult& r = o.result;
  pb::dict d;
  d["text"] = utf8_text(r.text);
  d["tokens"] = r.tokens;
  d["stop_reason"] = name(r.stop_reason);
  d["n_prompt"] = r.n_prompt;
  d["prefill_ms"] = r.prefill_ms;
  d["decode_ms"] = r.decode_ms;
  d["attn"] = attn_stats_dict(o.attn);
  if (o.lossless) {
    const LosslessStats& ls = o.lossless_stats;
    d["lossless"] =
        pb::dict(pb::arg("verifications") = ls.verifications, pb::arg("drafted") = ls.drafted,
                 pb::arg("accepted") = ls.accepted, pb::arg("acceptance") = ls.acceptance());
  }
  return d;
}

}  // namespace fasa::py
