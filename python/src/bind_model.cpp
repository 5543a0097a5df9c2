// Model: load by path or pulled name, its config, tokenization and prompt building; the
// process-wide thread count; where a pulled model name points.
#include <pybind11/stl.h>

#include "bindings.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/engine/prompt.h"
#include "fasa/hub/resolve.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::py {

namespace {

std::shared_ptr<PyModel> load(const std::string& path_or_name) {
  pb::gil_scoped_release nogil;
  auto m = std::make_shared<PyModel>();
  m->path = hub::resolve_model_path(path_or_name);
  m->model = Model::load(m->path);
  m->policy_ctx = policy_context(m->model);
  return m;
}

pb::dict config_dict(const PyModel& m) {
  const ModelConfig& c = m.model->config();
  pb::dict d;
  d["arch"] = c.arch;
  d["name"] = c.name;
  d["n_layers"] = c.n_layers;
  d["n_heads"] = c.n_heads;
  d["n_kv_heads"] = c.n_kv_heads;
  d["head_dim"] = c.head_dim;
  d["d_model"] = c.d_model;
  d["d_ff"] = c.d_ff;
  d["n_vocab"] = c.n_vocab;
  d["n_ctx_train"] = c.n_ctx_train;
  d["n_ctx_max"] = c.n_ctx_max();
  d["rope_base"] = c.rope_base;
  d["rope_dim"] = c.rope_dim;
  d["layer_window"] = c.layer_window;  // [n_layers] 0 = global; empty = every layer global
  d["n_windowed_layers"] = c.n_windowed_layers();
  d["tied_output"] = c.tied_output;
  d["weight_bytes"] = m.model->weight_bytes();
  return d;
}

void check_ids(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.n_vocab()) {
      fail("token id {} is out of range [0, {})", id, tok.n_vocab());
    }
  }
}

}  // namespace

void bind_model(pb::module_& m) {
  pb::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model")
      .def(pb::init(&load), pb::arg("path_or_name"))
      .def_readonly("path", &PyModel::path)
      .def_property_readonly("config", &config_dict)
      .def("sha256",
           [](const PyModel& self) {
             pb::gil_scoped_release nogil;
             return model_identity(*self.model);
           })
      .def(
          "tokenize",
          [](const PyModel& self, const std::string& text, bool add_bos, bool parse_special) {
            const Tokenizer& tok = self.model->require_tokenizer();
            pb::gil_scoped_release nogil;
            return tok.encode(text, add_bos, parse_special);
          },
          pb::arg("text"), pb::arg("add_bos"), pb::arg("parse_special"))
      .def(
          "detokenize",
          [](const PyModel& self, const std::vector<int32_t>& ids, bool show_special) {
            const Tokenizer& tok = self.model->require_tokenizer();
            check_ids(tok, ids);
            std::string s;
            {
              pb::gil_scoped_release nogil;
              s = tok.decode(ids, show_special);
            }
            return utf8_text(s);
          },
          pb::arg("ids"), pb::arg("show_special"))
      // A prompt as `fasa run` makes it: plain text with BOS, or the messages ((role, content)
      // pairs) in the model's chat format, ending with the assistant's turn opener.
      .def(
          "text_prompt",
          [](const PyModel& self, const std::string& text, bool parse_special) {
            pb::gil_scoped_release nogil;
            return text_prompt_tokens(*self.model, text, parse_special);
          },
          pb::arg("text"), pb::arg("parse_special"))
      .def(
          "chat_prompt",
          [](const PyModel& self, const std::vector<std::pair<std::string, std::string>>& msgs,
             bool parse_special) {
            std::vector<ChatMessage> cm;
            for (const auto& [role, content] : msgs) cm.push_back({role, content});
            pb::gil_scoped_release nogil;
            return chat_prompt_tokens(*self.model, cm, parse_special);
          },
          pb::arg("messages"), pb::arg("parse_special"))
      .def_property_readonly("bos_id",
                             [](const PyModel& self) {
                               return self.model->require_tokenizer().bos_id();
                             })
      .def_property_readonly("eos_id",
                             [](const PyModel& self) {
                               return self.model->require_tokenizer().eos_id();
                             })
      .def("is_eog", [](const PyModel& self, int32_t id) {
        return self.model->require_tokenizer().is_eog(id);
      });

  m.def(
      "set_threads",
      [](int n) {
        if (n < 0) fail("threads must be >= 0 (got {})", n);
        set_num_threads(n);
      },
      pb::arg("n"));
  m.def("num_threads", &num_threads);
  m.def(
      "model_path",
      [](const std::string& path_or_name) {
        pb::gil_scoped_release nogil;  // (a changed pulled file is hashed again)
        return hub::resolve_model_path(path_or_name);
      },
      pb::arg("path_or_name"));
}

}  // namespace fasa::py
