// eval_ppl and eval_tasks: the results `fasa eval ppl --json` and `fasa eval tasks --json` print,
// field for field, as JSON text (the Python side loads it). Progress goes to a Python callable;
// Ctrl-C stops them (call_guard.h).

#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "call_guard.h"
#include "fasa/core/amx.h"
#include "fasa/core/isa.h"
#include "fasa/core/sha256.h"
#include "fasa/engine/lossless_options.h"
#include "fasa/eval/perplexity.h"
#include "fasa/eval/task_json.h"
#include "fasa/eval/task_runner.h"
#include "fasa/io/gguf.h"
#include "fasa/kernels/kv_rows.h"
#include "fasa/tokenizer/tokenizer.h"

const char* fasa_version_text();  // generated at build time (cmake/git_commit.cmake)

namespace fasa::py {

void add_provenance(nlohmann::ordered_json& j, const PyModel& m, const std::string& spec,
                    const Source* text, const Source* tasks) {
  j["fasa_version"] = fasa_version_text();
  j["kernels"] = std::string(isa_name(active_isa())) + ", AMX " + amx_status();
  j["model_sha256"] = model_identity(*m.model);
  if (text && text->is_file) j["text_sha256"] = sha256_hex(text->bytes);
  if (tasks && tasks->is_file) j["tasks_sha256"] = sha256_hex(tasks->bytes);
  if (!spec.empty()) add_calibration_json(j, spec, true);
}

namespace {

using Json = nlohmann::ordered_json;

// The engine's progress(done, total) as calls of the Python callable `fn` (None: none) with
// (phase, done, total); an exception it raises stops the engine (call_guard.h).
std::function<void(int, int)> progress_of(const pb::object& fn, const char* phase,
                                          CallGuard& guard) {
  if (fn.is_none()) return nullptr;
  return [&fn, phase, &guard](int done, int total) {
    guard.with_gil([&] { fn(phase, done, total); });
  };
}

Json ppl_json(const PyModel& m, const Source& text, const PplOptions& o, const std::string& kv,
              const PplResult& r) {
  Json j = ppl_result_json(m.model->file().path(), text.label, kv, o, r);
  add_provenance(j, m, r.policy, &text, nullptr);
  return j;
}

std::string eval_ppl(const PyModel& m, const Source& text, int n_ctx, int n_chunks, int n_decode,
                     int batch, const std::string& kv_type, const std::string& policy,
                     const std::vector<std::string>& compare,
                     const std::function<void(int, int)>& progress) {
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
  const std::vector<PplResult> rs = perplexity_all(m.model, tokens, o, progress);
  if (rs.size() == 1) return ppl_json(m, text, o, kv_type, rs[0]).dump();
  Json j;
  j["results"] = Json::array();
  for (const PplResult& r : rs) j["results"].push_back(ppl_json(m, text, o, kv_type, r));
  return j.dump();
}

std::string eval_tasks(const PyModel& m, const Source& src,
                       const std::vector<std::string>& policies, int n_ctx, int jobs,
                       const std::string& kv_type, bool chat, const std::string& lossless,
                       bool question_under_policy, const std::function<void(int, int)>& progress) {
  const LosslessOptions lo = parse_lossless(lossless);
  const std::vector<Task> tasks = parse_tasks(src.bytes, src.label);
  TaskRunOptions o;
  o.policies = policies;
  o.jobs = jobs;
  o.chat = chat;
  o.n_ctx = n_ctx;
  o.kv_type = parse_kv_type(kv_type);
  o.lossless = lo;
  o.question_under_policy = question_under_policy;
  const TaskRunResult r = run_tasks(m.model, tasks, o, progress);
  Json j;
  j["model"] = m.model->file().path();
  j["tasks_file"] = src.label;
  j["n_ctx"] = r.n_ctx;
  j["chat"] = chat;
  j["protocol"] = protocol_name(question_under_policy);
  j["kv_type"] = kv_type;
  j["seconds"] = r.seconds;
  j["lossless"] = lossless_name(lo);
  add_provenance(j, m, "", nullptr, &src);
  j["results"] = task_results_json(tasks, r, lo.k > 0);
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
  m.def(
      "eval_ppl",
      [](const PyModel& model, const Source& text, int n_ctx, int n_chunks, int n_decode, int batch,
         const std::string& kv_type, const std::string& policy,
         const std::vector<std::string>& compare, const pb::object& progress) {
        return guarded([&](CallGuard& guard) {
          return eval_ppl(model, text, n_ctx, n_chunks, n_decode, batch, kv_type, policy, compare,
                          progress_of(progress, "chunk", guard));
        });
      },
      pb::arg("model"), pb::arg("text"), pb::arg("n_ctx"), pb::arg("n_chunks"), pb::arg("n_decode"),
      pb::arg("batch"), pb::arg("kv_type"), pb::arg("policy"), pb::arg("compare"),
      pb::arg("progress"));
  m.def(
      "eval_tasks",
      [](const PyModel& model, const Source& tasks, const std::vector<std::string>& policies,
         int n_ctx, int jobs, const std::string& kv_type, bool chat, const std::string& lossless,
         bool question_under_policy, const pb::object& progress) {
        return guarded([&](CallGuard& guard) {
          return eval_tasks(model, tasks, policies, n_ctx, jobs, kv_type, chat, lossless,
                            question_under_policy, progress_of(progress, "generation", guard));
        });
      },
      pb::arg("model"), pb::arg("tasks"), pb::arg("policies"), pb::arg("n_ctx"), pb::arg("jobs"),
      pb::arg("kv_type"), pb::arg("chat"), pb::arg("lossless"), pb::arg("question_under_policy"),
      pb::arg("progress"));
}

}  // namespace fasa::py
