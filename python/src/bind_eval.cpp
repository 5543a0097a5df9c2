// eval_ppl and eval_tasks: the results `fasa eval ppl --json` and `fasa eval tasks --json` print,
// field for field, as JSON text (the Python side loads it).
#include <algorithm>

#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "fasa/core/parallel.h"
#include "fasa/core/process.h"
#include "fasa/core/sha256.h"
#include "fasa/engine/lossless_options.h"
#include "fasa/eval/perplexity.h"
#include "fasa/eval/task_json.h"
#include "fasa/eval/task_runner.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/kv_rows.h"
#include "fasa/tokenizer/tokenizer.h"

#ifndef FASA_VERSION
#define FASA_VERSION "dev"
#endif

namespace fasa::py {

namespace {

using Json = nlohmann::ordered_json;

// The calibration file a policy spec names, or "".
std::string spec_calibration(const std::string& spec) {
  std::string name;
  PolicyOptions opts;
  parse_policy_spec(spec, &name, &opts);
  const auto it = opts.find("calib");
  return it == opts.end() ? std::string() : it->second;
}

// The CLI's provenance fields (apps/fasa/provenance.h), from this build.
void add_provenance(Json& j, const PyModel& m, const std::string& spec, const Source* text,
                    const Source* tasks) {
  j["fasa_version"] = std::string(FASA_VERSION) + " (python)";
  j["model_sha256"] = model_identity(*m.model);
  if (text && text->is_file) j["text_sha256"] = sha256_hex(text->bytes);
  if (tasks && tasks->is_file) j["tasks_sha256"] = sha256_hex(tasks->bytes);
  const std::string calib = spec.empty() ? std::string() : spec_calibration(spec);
  if (!calib.empty()) {
    j["calib"] = calib;
    j["calib_sha256"] = sha256_file_hex(calib);
  }
}

Json ppl_json(const PyModel& m, const Source& text, const PplOptions& o, const std::string& kv,
              const PplResult& r) {
  Json j;
  j["model"] = m.model->file().path();
  j["text"] = text.label;
  j["policy"] = r.policy;
  j["kv_type"] = kv;
  j["n_ctx"] = o.n_ctx;
  j["n_decode"] = o.n_decode;
  j["n_chunks"] = r.n_chunks;
  j["n_tokens"] = r.n_tokens;
  j["n_scored"] = r.n_scored;
  j["ppl"] = r.ppl;
  j["ppl_se"] = r.ppl_se;
  j["mean_nll"] = r.mean_nll;
  j["chunk_ppl"] = r.chunk_ppl;
  j["decode_rows_read_fraction"] = r.attn.global_read_fraction();
  j["seconds"] = r.seconds;
  j["threads"] = num_threads();
  j["peak_rss_bytes"] = peak_rss_bytes();
  add_provenance(j, m, r.policy, &text, nullptr);
  return j;
}

std::string eval_ppl(const PyModel& m, const Source& text, int n_ctx, int n_chunks, int n_decode,
                     int batch, const std::string& kv_type, const std::string& policy,
                     const std::vector<std::string>& compare) {
  pb::gil_scoped_release nogil;
  const Tokenizer& tok = m.model->require_tokenizer();
  const auto tokens = tok.encode(text.bytes, true, false);
  PplOptions o;
  if (tok.adds_bos() && tok.bos_id() >= 0) o.chunk_bos = tok.bos_id();  // as llama-perplexity
  o.n_ctx = n_ctx;
  o.n_chunks = n_chunks;
  o.n_decode = n_decode;
  o.batch = batch;
  o.kv_type = parse_kv_type(kv_type);
  o.policy = policy;
  o.compare = compare;
  const std::vector<PplResult> rs = perplexity_all(m.model, tokens, o, nullptr);
  if (rs.size() == 1) return ppl_json(m, text, o, kv_type, rs[0]).dump();
  Json j;
  j["results"] = Json::array();
  for (const PplResult& r : rs) j["results"].push_back(ppl_json(m, text, o, kv_type, r));
  return j.dump();
}

Json task_results(const std::vector<Task>& tasks, const TaskRunResult& r, bool lossless) {
  const TaskScoreTable t = score_table(tasks, r);
  const TaskScoreTable pc = score_table(tasks, r, true);
  Json results = Json::array();
  for (size_t p = 0; p < r.policies.size(); ++p) {
    Json e;
    e["policy"] = r.policies[p];
    const std::string calib = spec_calibration(r.policies[p]);
    if (!calib.empty()) e["calib_sha256"] = sha256_file_hex(calib);
    e["score"] = t.overall[p];
    e["mean_of_kinds"] = t.kind_average[p];
    e["partial"] = pc.overall[p];
    e["partial_mean_of_kinds"] = pc.kind_average[p];
    Json by, by_partial;
    for (size_t k = 0; k < t.kinds.size(); ++k) {
      by[t.kinds[k]] = t.mean[k][p];
      by_partial[t.kinds[k]] = pc.mean[k][p];
    }
    e["by_task"] = by;
    e["partial_by_task"] = by_partial;
    const Json norm = acc_norm_by_kind(tasks, r, p);
    if (!norm.empty()) e["acc_norm_by_task"] = norm;
    LosslessStats st;
    double decode_ms = 0.0;
    int64_t n_tokens = 0;
    for (const auto& per_policy : r.outcome) {
      st += per_policy[p].lossless;
      decode_ms += per_policy[p].decode_ms;
      n_tokens += per_policy[p].n_generated;
    }
    e["decode_tokens_per_s"] = n_tokens * 1000.0 / std::max(decode_ms, 1e-9);
    if (lossless) {
      e["lossless"] = {{"verifications", st.verifications},
                       {"drafted", st.drafted},
                       {"accepted", st.accepted},
                       {"acceptance", st.acceptance()},
                       {"tokens_per_verification", st.tokens_per_verification()},
                       {"kv_bytes_per_token", st.kv_bytes_per_token()}};
    }
    results.push_back(e);
  }
  return results;
}

std::string eval_tasks(const PyModel& m, const Source& src,
                       const std::vector<std::string>& policies, int n_ctx, int jobs,
                       const std::string& kv_type, bool chat, const std::string& lossless) {
  pb::gil_scoped_release nogil;
  const LosslessOptions lo = parse_lossless(lossless);
  const std::vector<Task> tasks = parse_tasks(src.bytes, src.label);
  TaskRunOptions o;
  o.policies = policies;
  o.jobs = jobs;
  o.chat = chat;
  o.n_ctx = n_ctx;
  o.kv_type = parse_kv_type(kv_type);
  o.lossless = lo;
  const TaskRunResult r = run_tasks(m.model, tasks, o, nullptr);
  Json j;
  j["model"] = m.model->file().path();
  j["tasks_file"] = src.label;
  j["n_ctx"] = r.n_ctx;
  j["chat"] = chat;
  j["kv_type"] = kv_type;
  j["seconds"] = r.seconds;
  j["lossless"] = lossless_name(lo);
  add_provenance(j, m, "", nullptr, &src);
  j["results"] = task_results(tasks, r, lo.k > 0);
  j["items"] = task_items_json(tasks, r);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void bind_eval(pb::module_& m) {
  pb::class_<Source>(m, "Source")
      .def(pb::init([](pb::bytes bytes, std::string label, bool is_file) {
             return Source{std::string(bytes), std::move(label), is_file};
           }),
           pb::arg("bytes"), pb::arg("label"), pb::arg("is_file"))
      .def_readonly("label", &Source::label)
      .def_readonly("is_file", &Source::is_file);
  m.def("eval_ppl", &eval_ppl, pb::arg("model"), pb::arg("text"), pb::arg("n_ctx"),
        pb::arg("n_chunks"), pb::arg("n_decode"), pb::arg("batch"), pb::arg("kv_type"),
        pb::arg("policy"), pb::arg("compare"));
  m.def("eval_tasks", &eval_tasks, pb::arg("model"), pb::arg("tasks"), pb::arg("policies"),
        pb::arg("n_ctx"), pb::arg("jobs"), pb::arg("kv_type"), pb::arg("chat"),
        pb::arg("lossless"));
}

}  // namespace fasa::py
