// Session: one sequence's KV cache and policy; prefill and decode return the logits
// ([n_vocab] float32 bytes); fork continues another session's prefix in a new one.
#include <pybind11/stl.h>

#include "bindings.h"
#include "call_guard.h"
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

// Appends ids (a prefill, or a decode step for one token with `decode`), keeping the session's
// record of its tokens also when the engine stops part way (an interrupt between chunks).
pb::bytearray append(PySession& self, const std::vector<int32_t>& ids, bool decode) {
  const std::vector<float> logits = guarded([&](CallGuard&) {  // [n_vocab]
    const std::lock_guard<std::mutex> lock(self.mu);
    check_free(self);
    Session& s = *self.session;
    const size_t before = s.n_past();
    auto record = [&] {
      self.ids.insert(self.ids.end(), ids.begin(), ids.begin() + (s.n_past() - before));
    };
    try {
      std::vector<float> l = decode ? s.decode(ids[0]) : s.prefill(ids);
      record();
      return l;
    } catch (...) {
      record();
      throw;
    }
  });
  return float_bytes(logits.data(), logits.size());
}

// A new session holding self's tokens: its cache rows copied (Session::copy_prefix_from: the
// state its own prefill of them would give), under `policy` ("" = self's).
std::shared_ptr<PySession> fork(PySession& self, const std::string& policy) {
  auto f = std::make_shared<PySession>();
  f->model = self.model;
  pb::gil_scoped_release nogil;
  const std::lock_guard<std::mutex> lock(self.mu);
  SessionOptions so = self.session->options();
  if (!policy.empty()) so.policy = policy;
  f->session = std::make_unique<Session>(self.model->model, so, self.model->policy_ctx);
  f->session->copy_prefix_from(*self.session);
  f->ids = self.ids;
  return f;
}

// A read of the session's state under its mutex (taken with the GIL released).
template <typename Fn>
auto locked(PySession& self, Fn&& fn) {
  pb::gil_scoped_release nogil;
  const std::lock_guard<std::mutex> lock(self.mu);
  return fn(*self.session);
}

}  // namespace

void bind_session(pb::module_& m) {
  pb::class_<PySession, std::shared_ptr<PySession>>(m, "Session")
      .def(pb::init(&make_session), pb::arg("model"), pb::arg("policy"), pb::arg("n_ctx"),
           pb::arg("kv_type"), pb::arg("prefill_chunk"))
      .def(
          "prefill",
          [](PySession& self, const std::vector<int32_t>& ids) { return append(self, ids, false); },
          pb::arg("ids"))
      .def(
          "decode", [](PySession& self, int32_t token) { return append(self, {token}, true); },
          pb::arg("token"))
      .def("fork", &fork, pb::arg("policy"))
      .def("logits",
           [](PySession& self) {
             const std::vector<float> l = locked(self, [](Session& s) { return s.last_logits(); });
             return float_bytes(l.data(), l.size());
           })
      .def("reset",
           [](PySession& self) {
             pb::gil_scoped_release nogil;
             const std::lock_guard<std::mutex> lock(self.mu);
             check_free(self);
             self.session->reset();
             self.ids.clear();
           })
      .def_property_readonly("tokens",
                             [](PySession& self) {
                               pb::gil_scoped_release nogil;
                               const std::lock_guard<std::mutex> lock(self.mu);
                               return self.ids;
                             })
      .def_property_readonly("n_past",
                             [](PySession& self) {
                               return locked(self, [](Session& s) { return s.n_past(); });
                             })
      .def_property_readonly("n_ctx", [](PySession& self) { return self.session->n_ctx(); })
      .def_readonly("model", &PySession::model)
      .def("attn_stats",
           [](PySession& self) {
             const AttnStats st = locked(self, [](Session& s) { return s.attn_stats(); });
             return attn_stats_dict(st);
           })
      .def("kv_resident_bytes", [](PySession& self) {
        return locked(self, [](Session& s) { return s.kv_resident_bytes(); });
      });
}

}  // namespace fasa::py
