// Tools (function calling) in chat request bodies: "tools", "tool_choice", "parallel_tool_calls",
// an assistant message's "tool_calls" and a tool message's "tool_call_id". Every mistake is an
// ApiError(400) naming the field: a tool that is not {"type": "function", "function": {...}}, a
// function name outside OpenAI's [a-zA-Z0-9_-]{1,64} or given twice, parameters that are not
// an object schema or use a keyword outside the supported JSON-schema subset (named with its
// JSON pointer, as response_format's), a tool_choice other than "none", "auto", "required" or
// {"type": "function", "function": {"name"}} naming a defined function, tools beside another
// output constraint, and the deprecated "functions" and "function_call" (send "tools").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/server/api.h"

namespace fasa::server {

// "tools" (`v` with its keys in the body's order): fills r.tools.tools and r.tool_functions.
// Keys a tool or function holds that are not known are appended to r.ignored.
void parse_tools(const nlohmann::ordered_json& v, const std::string& param, GenRequest& r);
void parse_tool_choice(const nlohmann::json& v, const std::string& param, GenRequest& r);
// "functions" and "function_call": null, [] and "none"/"auto" change nothing; anything else is
// refused.
void refuse_functions(const nlohmann::json& v, const std::string& param);

// After every field: tool_choice against tools; `constraint` is the other field that
// constrains the output, if any (it and offered tools are refused together).
void check_tools(const GenRequest& r, const char* constraint);

// A message's "tool_calls" (null or [] for none), "tool_call_id" or "function_call" into `msg`;
// unknown keys of a call go to `ignored`.
void message_tool_field(const std::string& key, const nlohmann::json& v, const std::string& param,
                        ChatMessage& msg, std::vector<std::string>& ignored);
// Once the message is read: a tool message has a tool_call_id, only assistants make calls.
void check_tool_message(const ChatMessage& msg, const std::string& where);

}  // namespace fasa::server
