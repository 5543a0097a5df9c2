// Rendering of OpenAI-compatible response bodies, stream chunks and the model list (api.h).
// Keys keep OpenAI's order (ordered_json) so bodies read like theirs; model text is whatever
// the model produced, so invalid UTF-8 in it is replaced (U+FFFD), never thrown on.
#include "fasa/server/api.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/server/text_escape.h"
#include "fasa/server/tool_answer.h"

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

ojson usage(const std::vector<GenOutcome>& cs) {
  // Each prompt counted once, whatever its choices; of cached tokens, the most any of its
  // choices was given.
  std::map<int, std::pair<int, int>> prompts;  // prompt index -> (tokens, cached)
  int completion = 0;
  for (const GenOutcome& c : cs) {
    completion += c.completion_tokens;
    auto [it, fresh] = prompts.try_emplace(c.prompt_index, c.prompt_tokens, c.cached_tokens);
    if (!fresh) it->second.second = std::max(it->second.second, c.cached_tokens);
  }
  int prompt = 0, cached = 0;
  for (const auto& [i, p] : prompts) {
    prompt += p.first;
    cached += p.second;
  }
  ojson u;
  u["prompt_tokens"] = prompt;
  u["completion_tokens"] = completion;
  u["total_tokens"] = prompt + completion;
  u["prompt_tokens_details"]["cached_tokens"] = cached;
  return u;
}

// fasa's extension: which KV policy served the request and what it read (over every choice).
ojson fasa_stats(const std::vector<GenOutcome>& cs) {
  const GenOutcome& o = cs[0];
  uint64_t bytes = 0;
  double tokens = 0.0;
  for (const GenOutcome& c : cs) {
    bytes += c.kv_bytes_read;
    if (c.kv_bytes_read_per_token > 0) tokens += c.kv_bytes_read / c.kv_bytes_read_per_token;
  }
  ojson f;
  f["policy"] = o.policy;
  if (!o.calibration_kind.empty()) {
    f["calibration"] = {{"kind", o.calibration_kind}};
    if (!o.calibration_file.empty()) {
      f["calibration"]["file"] = o.calibration_file;
      f["calibration"]["sha256"] = o.calibration_sha256;
    }
  }
  f["kv_bytes_read"] = bytes;
  f["kv_bytes_read_per_token"] = tokens > 0 ? bytes / tokens : 0.0;
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

// llama-server's timings: tokens summed over the choices, times the longest (they run side by
// side); rates 0 where nothing was timed.
ojson timings(const std::vector<GenOutcome>& cs) {
  int cache_n = 0, prompt_n = 0, predicted_n = 0;
  double prompt_ms = 0.0, predicted_ms = 0.0;
  for (const GenOutcome& c : cs) {
    cache_n += c.cached_tokens;
    prompt_n += c.prompt_tokens - c.cached_tokens;
    predicted_n += c.completion_tokens;
    prompt_ms = std::max(prompt_ms, c.prompt_ms);
    predicted_ms = std::max(predicted_ms, c.predicted_ms);
  }
  const auto per_token = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto per_second = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  ojson t;
  t["cache_n"] = cache_n;
  t["prompt_n"] = prompt_n;
  t["prompt_ms"] = prompt_ms;
  t["prompt_per_token_ms"] = per_token(prompt_ms, prompt_n);
  t["prompt_per_second"] = per_second(prompt_ms, prompt_n);
  t["predicted_n"] = predicted_n;
  t["predicted_ms"] = predicted_ms;
  t["predicted_per_token_ms"] = per_token(predicted_ms, predicted_n);
  t["predicted_per_second"] = per_second(predicted_ms, predicted_n);
  return t;
}

// "usage" (with the fasa stats inside too, where clients that keep only the usage, as
// LangChain's response_metadata["token_usage"], still see them), "fasa" and "timings".
ojson with_usage(ojson j, const std::vector<GenOutcome>& cs) {
  j["usage"] = usage(cs);
  j["usage"]["fasa"] = fasa_stats(cs);
  j["fasa"] = fasa_stats(cs);
  j["timings"] = timings(cs);
  return j;
}

// The token's bytes as JSON numbers (chat logprobs' "bytes").
ojson bytes_of(const std::string& t) {
  ojson b = ojson::array();
  for (unsigned char c : t) b.push_back(static_cast<int>(c));
  return b;
}

// Completions' logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}; offsets
// count bytes from the start of the entries' text.
ojson completion_logprobs(const std::vector<LogprobEntry>& es) {
  size_t offset = 0;
  ojson tokens = ojson::array(), lps = ojson::array(), tops = ojson::array(), offs = ojson::array();
  for (const LogprobEntry& e : es) {
    tokens.push_back(e.token);
    lps.push_back(e.logprob ? ojson(*e.logprob) : ojson(nullptr));
    if (!e.logprob) {
      tops.push_back(nullptr);
    } else {
      ojson t = ojson::object();
      for (const auto& [tok, lp] : e.top) {
        if (!t.contains(tok)) t[tok] = lp;  // two ids of one text: the likelier is listed
      }
      tops.push_back(std::move(t));
    }
    offs.push_back(offset);
    offset += e.token.size();
  }
  ojson j;
  j["tokens"] = std::move(tokens);
  j["token_logprobs"] = std::move(lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offs);
  return j;
}

// Chat's logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs"}], "refusal"}.
ojson chat_logprobs(const std::vector<LogprobEntry>& es) {
  ojson content = ojson::array();
  for (const LogprobEntry& e : es) {
    ojson c;
    c["token"] = e.token;
    c["logprob"] = e.logprob.value_or(0.0f);
    c["bytes"] = bytes_of(e.token);
    ojson top = ojson::array();
    for (const auto& [tok, lp] : e.top) {
      top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
    }
    c["top_logprobs"] = std::move(top);
    content.push_back(std::move(c));
  }
  ojson j;
  j["content"] = std::move(content);
  j["refusal"] = nullptr;
  return j;
}

const char* chunk_object(Endpoint endpoint) {
  return endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
}

}  // namespace

std::string render_completion(const std::vector<GenOutcome>& cs) {
  ojson choices = ojson::array();
  for (const GenOutcome& o : cs) {
    ojson choice;
    choice["index"] = o.index;
    choice["text"] = o.text;
    choice["finish_reason"] = finish(o.finish_reason);
    choice["logprobs"] = o.has_logprobs ? completion_logprobs(o.logprobs) : ojson(nullptr);
    choices.push_back(std::move(choice));
  }
  ojson j = head(cs[0], "text_completion");
  j["choices"] = std::move(choices);
  return dump(with_usage(std::move(j), cs));
}

std::string render_chat_completion(const std::vector<GenOutcome>& cs) {
  ojson choices = ojson::array();
  for (const GenOutcome& o : cs) {
    ojson choice;
    choice["index"] = o.index;
    choice["message"] = {{"role", "assistant"},
                         {"content", o.null_content ? ojson(nullptr) : ojson(o.text)}};
    if (!o.tool_calls.empty()) choice["message"]["tool_calls"] = tool_calls_json(o.tool_calls);
    choice["finish_reason"] = finish(o.finish_reason);
    choice["logprobs"] = o.has_logprobs ? chat_logprobs(o.logprobs) : ojson(nullptr);
    choices.push_back(std::move(choice));
  }
  ojson j = head(cs[0], "chat.completion");
  j["choices"] = std::move(choices);
  return dump(with_usage(std::move(j), cs));
}

std::string render_completion(const GenOutcome& o) {
  return render_completion(std::vector<GenOutcome>{o});
}
std::string render_chat_completion(const GenOutcome& o) {
  return render_chat_completion(std::vector<GenOutcome>{o});
}

std::string sse_completion_chunk(const GenOutcome& o, std::string_view delta,
                                 std::string_view finish_reason,
                                 const std::vector<LogprobEntry>& logprobs,
                                 const std::vector<GenOutcome>* timed) {
  ojson choice;
  choice["index"] = o.index;
  choice["text"] = std::string(delta);
  choice["finish_reason"] = finish(finish_reason);
  choice["logprobs"] = o.has_logprobs ? completion_logprobs(logprobs) : ojson(nullptr);
  ojson j = head(o, chunk_object(Endpoint::Completions));
  j["choices"] = ojson::array({choice});
  if (timed) j["timings"] = timings(*timed);
  return sse(j);
}

std::string sse_chat_chunk(const GenOutcome& o, std::string_view delta,
                           std::string_view finish_reason, bool first,
                           const std::vector<LogprobEntry>& logprobs,
                           const std::vector<GenOutcome>* timed) {
  ojson d = ojson::object();
  if (first) {  // OpenAI announces the role once, with empty content
    d["role"] = "assistant";
    d["content"] = "";
  }
  if (!delta.empty()) d["content"] = std::string(delta);
  ojson choice;
  choice["index"] = o.index;
  choice["delta"] = std::move(d);
  choice["finish_reason"] = finish(finish_reason);
  choice["logprobs"] = o.has_logprobs ? chat_logprobs(logprobs) : ojson(nullptr);
  ojson j = head(o, chunk_object(Endpoint::Chat));
  j["choices"] = ojson::array({choice});
  if (timed) j["timings"] = timings(*timed);
  return sse(j);
}

std::string sse_usage_chunk(const std::vector<GenOutcome>& cs, Endpoint endpoint) {
  ojson j = head(cs[0], chunk_object(endpoint));
  j["choices"] = ojson::array();
  return sse(with_usage(std::move(j), cs));
}

std::string sse_usage_chunk(const GenOutcome& o, Endpoint endpoint) {
  return sse_usage_chunk(std::vector<GenOutcome>{o}, endpoint);
}

std::string sse_done() { return "data: [DONE]\n\n"; }

namespace {

ojson model_object(const std::string& id, int64_t created) {
  ojson m;
  m["id"] = id;
  m["object"] = "model";
  m["created"] = created;
  m["owned_by"] = "fasa";
  return m;
}

}  // namespace

std::string render_model(const std::string& id, int64_t created) {
  return dump(model_object(id, created));
}

std::string render_models(const std::vector<std::string>& ids, int64_t created) {
  ojson data = ojson::array();
  for (const std::string& id : ids) data.push_back(model_object(id, created));
  ojson j;
  j["object"] = "list";
  j["data"] = std::move(data);
  return dump(j);
}

std::vector<std::pair<std::string, std::string>> fasa_headers(const std::vector<GenOutcome>& cs,
                                                              bool with_counts) {
  const ojson f = fasa_stats(cs);
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("X-Fasa-Policy", header_text(f["policy"].get<std::string>()));
  if (f.contains("calibration")) {
    const ojson& c = f["calibration"];
    std::string v = header_text(c["kind"].get<std::string>());
    if (c.contains("file")) {
      v += fmt::format("; file={}; sha256={}", header_text(c["file"].get<std::string>()),
                       header_text(c["sha256"].get<std::string>()));
    }
    h.emplace_back("X-Fasa-Calibration", v);
  }
  if (!with_counts) return h;
  h.emplace_back("X-Fasa-Kv-Bytes-Read", fmt::format("{}", f["kv_bytes_read"].get<uint64_t>()));
  h.emplace_back("X-Fasa-Kv-Bytes-Read-Per-Token",
                 fmt::format("{:.1f}", f["kv_bytes_read_per_token"].get<double>()));
  if (f.contains("lossless")) {
    const ojson& l = f["lossless"];
    h.emplace_back("X-Fasa-Lossless",
                   fmt::format("{}; acceptance={:.4f}; tokens_per_verification={:.4f}",
                               header_text(l["setting"].get<std::string>()),
                               l["acceptance"].get<double>(),
                               l["tokens_per_verification"].get<double>()));
  }
  return h;
}

}  // namespace fasa::server
