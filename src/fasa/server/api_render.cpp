// Rendering of OpenAI-compatible response bodies, stream chunks and the model list (api.h).
// Keys keep OpenAI's order (ordered_json) so bodies read like theirs; model text is whatever
// the model produced, so invalid UTF-8 in it is replaced (U+FFFD), never thrown on.
#include "fasa/server/api.h"

#include <nlohmann/json.hpp>

namespace fasa::server {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string sse(const ojson& j) { return "data: " + dump(j) + "\n\n"; }

// A finish reason, or null while the choice is still generating.
ojson finish(std::string_view reason) {
  return reason.empty() ? ojson(nullptr) : ojson(std::string(reason));
}

// id, object, created, model: the head every body and chunk starts with.
ojson head(const GenOutcome& o, const char* object) {
  ojson j;
  j["id"] = o.id;
  j["object"] = object;
  j["created"] = o.created;
  j["model"] = o.model;
  return j;
}

ojson usage(const GenOutcome& o) {
  ojson u;
  u["prompt_tokens"] = o.prompt_tokens;
  u["completion_tokens"] = o.completion_tokens;
  u["total_tokens"] = o.prompt_tokens + o.completion_tokens;
  return u;
}

// fasa's extension: which KV policy served the request and what it read.
ojson fasa_stats(const GenOutcome& o) {
  ojson f;
  f["policy"] = o.policy;
  f["kv_bytes_read"] = o.kv_bytes_read;
  f["kv_bytes_read_per_token"] = o.kv_bytes_read_per_token;
  if (o.lossless != "off") {
    const LosslessStats& s = o.lossless_stats;
    f["lossless"] = {{"setting", o.lossless},
                     {"verifications", s.verifications},
                     {"drafted", s.drafted},
                     {"accepted", s.accepted},
                     {"acceptance", s.acceptance()},
                     {"tokens_per_verification", s.tokens_per_verification()}};
  }
  return f;
}

ojson with_usage(ojson j, const GenOutcome& o) {
  j["usage"] = usage(o);
  j["fasa"] = fasa_stats(o);
  return j;
}

const char* chunk_object(Endpoint endpoint) {
  return endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
}

}  // namespace

std::string render_completion(const GenOutcome& o) {
  ojson choice;
  choice["index"] = 0;
  choice["text"] = o.text;
  choice["finish_reason"] = finish(o.finish_reason);
  choice["logprobs"] = nullptr;
  ojson j = head(o, "text_completion");
  j["choices"] = ojson::array({choice});
  return dump(with_usage(std::move(j), o));
}

std::string render_chat_completion(const GenOutcome& o) {
  ojson choice;
  choice["index"] = 0;
  choice["message"] = {{"role", "assistant"}, {"content", o.text}};
  choice["finish_reason"] = finish(o.finish_reason);
  choice["logprobs"] = nullptr;
  ojson j = head(o, "chat.completion");
  j["choices"] = ojson::array({choice});
  return dump(with_usage(std::move(j), o));
}

std::string sse_completion_chunk(const GenOutcome& o, std::string_view delta,
                                 std::string_view finish_reason) {
  ojson choice;
  choice["index"] = 0;
  choice["text"] = std::string(delta);
  choice["finish_reason"] = finish(finish_reason);
  choice["logprobs"] = nullptr;
  ojson j = head(o, chunk_object(Endpoint::Completions));
  j["choices"] = ojson::array({choice});
  return sse(j);
}

std::string sse_chat_chunk(const GenOutcome& o, std::string_view delta,
                           std::string_view finish_reason, bool first) {
  ojson d = ojson::object();
  if (first) {  // OpenAI announces the role once, with empty content
    d["role"] = "assistant";
    d["content"] = "";
  }
  if (!delta.empty()) d["content"] = std::string(delta);
  ojson choice;
  choice["index"] = 0;
  choice["delta"] = std::move(d);
  choice["finish_reason"] = finish(finish_reason);
  choice["logprobs"] = nullptr;
  ojson j = head(o, chunk_object(Endpoint::Chat));
  j["choices"] = ojson::array({choice});
  return sse(j);
}

std::string sse_usage_chunk(const GenOutcome& o, Endpoint endpoint) {
  ojson j = head(o, chunk_object(endpoint));
  j["choices"] = ojson::array();
  return sse(with_usage(std::move(j), o));
}

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string render_models(const std::vector<std::string>& ids, int64_t created) {
  ojson data = ojson::array();
  for (const std::string& id : ids) {
    ojson m;
    m["id"] = id;
    m["object"] = "model";
    m["created"] = created;
    m["owned_by"] = "fasa";
    data.push_back(std::move(m));
  }
  ojson j;
  j["object"] = "list";
  j["data"] = std::move(data);
  return dump(j);
}

}  // namespace fasa::server
