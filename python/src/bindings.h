// The pieces of the extension module fasa._fasa: each bind_*.cpp registers one part of the API
// on the module, over the engine's libraries. Every call into the engine that computes runs
// with the GIL released; fasa::Error becomes fasa.FasaError (module.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "fasa/attention/attention.h"
#include "fasa/attention/policy.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/logit_rules.h"
#include "fasa/engine/sampler.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa::py {

namespace pb = pybind11;

// A loaded model and its policy context (made once: sessions share the memoized model hash).
struct PyModel {
  std::string path;  // the GGUF file (a model name resolved through the cache)
  std::shared_ptr<const Model> model;
  PolicyContext policy_ctx;
};

// One sequence. `mu` serializes the Python threads that share it (each call holds it while
// the GIL is released; never take it with the GIL held: a callback under it takes the GIL).
struct PySession {
  std::shared_ptr<PyModel> model;
  std::unique_ptr<Session> session;
  std::vector<int32_t> ids;  // [n_past] the tokens the cache holds, in order
  bool streaming = false;    // an open Stream generates on it (check_free refuses other work)
  std::mutex mu;
};

// Throws fasa::Error when a stream is open on the session (call with its mutex held).
void check_free(const PySession& s);

// A text or task file given to the engine: its bytes, what results call it (the path, or
// "<text>"), and whether it is a file (then results carry its hash, as the CLI's do).
struct Source {
  std::string bytes;
  std::string label;
  bool is_file = false;
};

// The CLI's provenance fields (apps/fasa/provenance.h), from this build: the same version text,
// with the commit the package was built from; the hashes of the model, the text and task files
// (when they are files) and the calibration `spec` reads (when not empty).
void add_provenance(nlohmann::ordered_json& j, const PyModel& m, const std::string& spec,
                    const Source* text, const Source* tasks);

// A float vector as a bytearray of float32 (the Python side views it with numpy.frombuffer).
pb::bytearray float_bytes(const float* data, size_t n);
// Every AttnStats counter by name, and the global layers' read fraction.
pb::dict attn_stats_dict(const AttnStats& st);
// UTF-8 bytes to str, an invalid sequence replaced by U+FFFD.
pb::str utf8_text(const std::string& s);

// A generation's options from the dict the Python side checked: max_tokens, temperature, top_k,
// top_p, min_p, seed, stop, presence_penalty, frequency_penalty, repetition_penalty and
// logit_bias (a list of (id, bias)). The sampler's and the rules' parts alone for sampling.
GenerateOptions generate_options(const pb::dict& args);
SamplerParams sampler_params(const pb::dict& args);
LogitRules logit_rules(const pb::dict& args);

void bind_model(pb::module_& m);
void bind_session(pb::module_& m);
void bind_generate(pb::module_& m);
void bind_policy(pb::module_& m);
void bind_eval(pb::module_& m);
void bind_calibrate(pb::module_& m);
void bind_bench(pb::module_& m);
void bind_stream(pb::module_& m);
void bind_sample(pb::module_& m);

}  // namespace fasa::py
