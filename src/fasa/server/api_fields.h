// Request fields parsed outside api_parse.cpp's tables of OpenAI's fields (which call these):
//  - the fields other servers take beyond OpenAI's, and OpenAI fields this server cannot honour
//    (api_fields.cpp): vLLM's stop controls min_tokens, ignore_eos and stop_token_ids are
//    applied; every other field that would change the answer (vLLM's beam search or
//    bad_words, llama-server's grammar or mirostat, OpenAI's audio or web search, ...) is
//    refused with an ApiError(400) naming it, unless its value is the one that changes nothing
//    ("typical_p": 1, "use_beam_search": false, ...), which is accepted;
//  - /v1/completions' prompt, one or several (api_prompts.cpp).
// Fields in neither place are ignored and named (GenRequest::ignored).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fasa/server/api.h"

namespace fasa::server {

// True when `key` is one of the fields above for `endpoint` (its value applied to `req`, or
// refused; null means absent); false for a field to ignore.
bool parse_extra_field(const std::string& key, const nlohmann::json& value, Endpoint endpoint,
                       GenRequest& req);

// "prompt": a string, token ids, or an array of one or more strings or of one or more token-id
// arrays (not mixed), at most GenRequest::kMaxPrompts. The first (or only) prompt goes into
// prompt / prompt_ids / prompt_is_ids, every one into prompts when there are several.
void parse_prompts(const nlohmann::json& v, const std::string& param, GenRequest& req);

// Several prompts times n choices: at most GenRequest::kMaxPrompts sequences (400 naming "n").
void check_prompts_times_n(const GenRequest& req);

// Every sequence of a request (prompts x n, unless max_tokens is 0) must fit in a server's
// `capacity` (slots plus queue): a request of more could never be served, however long its
// client retried (400 naming "prompt" for several prompts, else "n").
void check_sequences_fit(const GenRequest& req, size_t n_prompts, int capacity);

// The request once per prompt, each with its prompt in prompt / prompt_ids / prompt_is_ids and
// prompts empty ({req} itself for one prompt).
std::vector<GenRequest> one_request_per_prompt(const GenRequest& req);

}  // namespace fasa::server
