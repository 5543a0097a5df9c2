// Session: one sequence's KV cache and policy; prefill and decode return the logits
// ([n_vocab] float32 bytes).
#include <pybind11/stl.h>

#include "bindings.h"
#include "fasa/kernels/kv_rows.h"

namespace fasa::py {

namespace {

std::shared_ptr<PySession> make_session(const std::shared_ptr<PyModel>& model,
                                        const std::string& policy, int n_ctx,
                                        const std::string& kv_type, int prefill_chunk) {
  SessionOptions so;
  so.policy = policy;
  so.n_ctx = n_ctx;
  so.kv_type = parse_kv_type(kv_type);
  so.prefill_chunk = prefill_chunk;
  auto s = std::make_shared<PySession>();
  s->model = model;
  pb::gil_scoped_release nogil;
  s->session = std::make_unique<Session>(model->model, so, model->policy_ctx);
  return s;
}

}  // namespace

void bind_session(pb::module_& m) {
  pb::class_<PySession, std::shared_ptr<PySession>>(m, "Session")
      .def(pb::init(&make_session), pb::arg("model"), pb::arg("policy"), pb::arg("n_ctx"),
           pb::arg("kv_type"), pb::arg("prefill_chunk"))
      .def(
          "prefill",
          [](PySession& self, const std::vector<int32_t>& ids) {
            std::vector<float> logits;  // [n_vocab]
            {
              pb::gil_scoped_release nogil;
              std::lock_guard<std::mutex> lock(self.mu);
              logits = self.session->prefill(ids);
            }
            return float_bytes(logits.data(), logits.size());
          },
          pb::arg("ids"))
      .def(
          "decode",
          [](PySession& self, int32_t token) {
            std::vector<float> logits;  // [n_vocab]
            {
              pb::gil_scoped_release nogil;
              std::lock_guard<std::mutex> lock(self.mu);
              logits = self.session->decode(token);
            }
            return float_bytes(logits.data(), logits.size());
          },
          pb::arg("token"))
      .def("logits",
           [](PySession& self) {
             std::lock_guard<std::mutex> lock(self.mu);
             const std::vector<float>& l = self.session->last_logits();
             return float_bytes(l.data(), l.size());
           })
      .def("reset",
           [](PySession& self) {
             pb::gil_scoped_release nogil;
             std::lock_guard<std::mutex> lock(self.mu);
             self.session->reset();
           })
      .def_property_readonly("n_past",
                             [](PySession& self) {
                               std::lock_guard<std::mutex> lock(self.mu);
                               return self.session->n_past();
                             })
      .def_property_readonly("n_ctx", [](PySession& self) { return self.session->n_ctx(); })
      .def_readonly("model", &PySession::model)
      .def("attn_stats",
           [](PySession& self) {
             std::lock_guard<std::mutex> lock(self.mu);
             return attn_stats_dict(self.session->attn_stats());
           })
      .def("kv_resident_bytes", [](PySession& self) {
        std::lock_guard<std::mutex> lock(self.mu);
        return self.session->kv_resident_bytes();
      });
}

}  // namespace fasa::py
