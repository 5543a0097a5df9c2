// fasa._fasa: the extension module. fasa::Error (bad input: files, options, prompts) is raised as
// fasa.FasaError, a subclass of both ValueError and RuntimeError, with the engine's message.
#include <Python.h>

#include "bindings.h"
#include "fasa/core/error.h"

namespace fasa::py {

pb::bytearray float_bytes(const float* data, size_t n) {
  return pb::bytearray(reinterpret_cast<const char*>(data), n * sizeof(float));
}

pb::dict attn_stats_dict(const AttnStats& st) {
  pb::dict d;
  for (const AttnStats::Field& f : AttnStats::fields()) d[f.name] = st.*f.member;
  d["global_read_fraction"] = st.global_read_fraction();
  return d;
}

pb::str utf8_text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw pb::error_already_set();
  return pb::reinterpret_steal<pb::str>(o);
}

}  // namespace fasa::py

PYBIND11_MODULE(_fasa, m) {
  namespace pb = pybind11;
  m.doc() = "fasa engine bindings (use the fasa package, not this module)";
  // Created once and kept for the process: the translator below raises it.
  static PyObject* fasa_error = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_RuntimeError);
    PyObject* e =
        PyErr_NewExceptionWithDoc("fasa.FasaError",
                                  "An error the fasa engine reports: bad input, with its message.",
                                  bases, nullptr);
    Py_DECREF(bases);
    return e;
  }();
  if (fasa_error == nullptr) throw pb::error_already_set();
  m.attr("FasaError") = pb::handle(fasa_error);
  pb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fasa::Error& e) {
      PyErr_SetString(fasa_error, e.what());
    }
  });
  fasa::py::bind_model(m);
  fasa::py::bind_session(m);
  fasa::py::bind_generate(m);
  fasa::py::bind_policy(m);
  fasa::py::bind_eval(m);
  fasa::py::bind_calibrate(m);
  fasa::py::bind_bench(m);
  fasa::py::bind_stream(m);
  fasa::py::bind_sample(m);
}
