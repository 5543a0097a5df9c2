#include "fasa/server/tool_answer.h"

#include <random>

#include "fasa/tokenizer/chat_tool_calls.h"

namespace fasa::server {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// A chunk of choice o.index whose delta is `delta`.
std::string delta_chunk(const GenOutcome& o, ojson delta) {
  ojson choice;
  choice["index"] = o.index;
  choice["delta"] = std::move(delta);
  choice["finish_reason"] = nullptr;
  choice["logprobs"] = nullptr;
  ojson j;
  j["id"] = o.id;
  j["object"] = "chat.completion.chunk";
  j["created"] = o.created;
  j["model"] = o.model;
  j["choices"] = ojson::array({std::move(choice)});
  return "data: " + dump(j) + "\n\n";
}

std::vector<ChatToolCall> with_ids(ToolFormat tf, const std::vector<ParsedToolCall>& calls) {
  std::vector<ChatToolCall> out;
  for (const ParsedToolCall& c : calls) out.push_back({tool_call_id(tf), c.name, c.arguments});
  return out;
}

}  // namespace

ToolAnswer tool_answer(const Model& model, const GenRequest& r, GenerateOptions& go) {
  if (!r.tools.offered()) return {};
  const ToolAnswer a{detect_tool_format(model.file()), &r.tools};
  auto g = tool_call_grammar(a.format, r.tool_functions, r.tools);
  if (g && r.lossless.k > 0) {
    throw ApiError(400,
                   "'fasa.lossless' cannot be combined with a tool_choice that constrains the "
                   "answer ('required', a named function, or 'auto' for a model without a tool "
                   "format of its own)",
                   "fasa.lossless");
  }
  if (g) go.grammar = std::move(g);
  return a;
}

std::string tool_call_id(ToolFormat tf) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, 61);
  const int n = tf == ToolFormat::MistralV3 ? 9 : 24;
  std::string id = tf == ToolFormat::MistralV3 ? "" : "call_";
  for (int i = 0; i < n; ++i) id += kAlnum[pick(rng)];
  return id;
}

void read_tool_calls(ToolFormat tf, const ChatTools& tools, GenOutcome& o) {
  const ParsedAnswer a = parse_tool_calls(tf, o.text, tools);
  o.text = a.content.value_or("");
  if (a.calls.empty()) return;
  o.null_content = !a.content;
  o.tool_calls = with_ids(tf, a.calls);
  o.finish_reason = "tool_calls";
}

ojson tool_calls_json(const std::vector<ChatToolCall>& calls) {
  ojson out = ojson::array();
  for (const ChatToolCall& c : calls) {
    ojson j;
    j["id"] = c.id;
    j["type"] = "function";
    j["function"] = {{"name", c.name}, {"arguments", c.arguments}};
    out.push_back(std::move(j));
  }
  return out;
}

std::string ToolCallStream::push(std::string_view piece) {
  text_ += piece;
  const std::string ready = tool_content_so_far(tf_, text_);
  if (ready.size() <= released_) return {};
  std::string out = ready.substr(released_);
  released_ = ready.size();
  return out;
}

std::string ToolCallStream::finish(GenOutcome& o) {
  const ParsedAnswer a = parse_tool_calls(tf_, text_, *tools_);
  std::string out;
  if (a.calls.empty()) {  // all of it is content: what was held back goes now
    const std::string& content = *a.content;
    if (content.size() > released_) {
      out += delta_chunk(o, {{"content", content.substr(released_)}});
    }
    return out;
  }
  if (a.content && a.content->size() > released_) {  // content before the calls, held back
    out += delta_chunk(o, {{"content", a.content->substr(released_)}});
  }
  const std::vector<ChatToolCall> calls = with_ids(tf_, a.calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    ojson head = {{"index", i},
                  {"id", calls[i].id},
                  {"type", "function"},
                  {"function", {{"name", calls[i].name}, {"arguments", ""}}}};
    out += delta_chunk(o, {{"tool_calls", ojson::array({std::move(head)})}});
    ojson args = {{"index", i}, {"function", {{"arguments", calls[i].arguments}}}};
    out += delta_chunk(o, {{"tool_calls", ojson::array({std::move(args)})}});
  }
  o.finish_reason = "tool_calls";
  return out;
}

}  // namespace fasa::server
