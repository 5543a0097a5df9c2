// Chat format detection, default system prompts and rendering. Renderings are checked against
// llama.cpp's built-in formats (goldens in tests/data/tokenizer/smollm2_goldens.json); SmolLM2's
// own template rendered by Jinja is checked in smollm2_golden_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "fasa/core/error.h"
#include "fasa/tokenizer/chat.h"

namespace fasa {
namespace {

const char* kSmolLM2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

const char* kQwenLikeTemplate =
    R"({%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + )"
    R"(messages[0]['content'] + '<|im_end|>\n' }}{%- else %}{{- '<|im_start|>system\nYou are )"
    R"(Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}{%- endif %})"
    R"({%- for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + )"
    R"(message['content'] + '<|im_end|>' + '\n'}}{%- endfor %})";

TEST(ChatDetect, FromTemplateMarkers) {
  EXPECT_EQ(detect_chat_format_from_template(kSmolLM2Template), ChatFormat::ChatML);
  EXPECT_EQ(detect_chat_format_from_template(
                "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
                "'<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}{% endfor %}"),
            ChatFormat::Llama3);
  EXPECT_EQ(detect_chat_format_from_template(
                "{% for m in messages %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' }}"
                "{% endfor %}"),
            ChatFormat::Llama2);
  EXPECT_EQ(detect_chat_format_from_template(
                "{% for m in messages %}{% if m['role'] == 'user' %}{{ '<|user|>\n' + "
                "m['content'] + eos_token }}{% endif %}{% endfor %}"),
            ChatFormat::Zephyr);
  EXPECT_EQ(detect_chat_format_from_template(
                "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + m['role'] + '\n' }}"
                "{% endfor %}"),
            ChatFormat::Gemma);
  EXPECT_EQ(detect_chat_format_from_template("", "gemma3"), ChatFormat::Gemma);
  EXPECT_STREQ(chat_format_name(ChatFormat::Llama3), "llama3");
}

TEST(ChatDetect, UnknownTemplatesAreErrors) {
  try {
    detect_chat_format_from_template("{{ messages | join('\n') }}", "llama");
    FAIL() << "expected fasa::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.chat_template"), std::string::npos);
  }
  try {
    detect_chat_format_from_template("", "llama");
    FAIL() << "expected fasa::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer.chat_template"), std::string::npos);
  }
}

TEST(ChatDefaultSystem, FromTemplateLiterals) {
  EXPECT_EQ(chat_default_system_from_template(kSmolLM2Template),
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  // An expression is skipped; the literal default further on is found.
  EXPECT_EQ(chat_default_system_from_template(kQwenLikeTemplate),
            "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  // Escapes inside the literal are resolved.
  EXPECT_EQ(chat_default_system_from_template(
                R"({{ '<|im_start|>system\nYou\'re \"helpful\".<|im_end|>\n' }})"),
            "You're \"helpful\".");
  EXPECT_EQ(chat_default_system_from_template(
                "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + "
                "'<|im_end|>\n'}}{% endfor %}"),
            "");
  EXPECT_EQ(chat_default_system_from_template(""), "");
}

TEST(ChatRender, ChatMLWithDefaultSystem) {
  const std::string sys = "You are SmolLM.";
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "hi"}}, true, sys),
            "<|im_start|>system\nYou are SmolLM.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"system", "Terse."}, {"user", "hi"}}, false, sys),
            "<|im_start|>system\nTerse.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {}, true, sys), "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "hi"}}, true),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatRender, GemmaFollowsGemma3Template) {
  // System text starts the first user turn untrimmed, then a blank line; turns are trimmed.
  EXPECT_EQ(render_chat(ChatFormat::Gemma, {{"system", " Sys. "}, {"user", " hi\n"}}, true),
            "<start_of_turn>user\n Sys. \n\nhi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(render_chat(ChatFormat::Gemma, {{"system", ""}, {"user", "x"}}, false),
            "<start_of_turn>user\n\n\nx<end_of_turn>\n");
  // Trimming is Python's strip: Unicode spaces and U+001C..U+001F go, U+200B (no space) stays.
  EXPECT_EQ(render_chat(ChatFormat::Gemma,
                        {{"user",
                          "\xc2\xa0\x1f"
                          "a\xe2\x80\x8b\xe3\x80\x80"}},
                        false),
            "<start_of_turn>user\na\xe2\x80\x8b<end_of_turn>\n");
  EXPECT_EQ(render_chat(ChatFormat::Gemma, {{"user", "q"}, {"assistant", " a "}}, true),
            "<start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\na<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(render_chat(ChatFormat::Gemma, {}, true), "<start_of_turn>model\n");
}

TEST(ChatRender, MatchesLlamaCppBuiltinFormats) {
  std::ifstream in(FASA_TEST_DATA_DIR "/tokenizer/smollm2_goldens.json");
  ASSERT_TRUE(in.good());
  const auto goldens = nlohmann::json::parse(in);
  const std::map<std::string, ChatFormat> formats = {{"chatml", ChatFormat::ChatML},
                                                     {"llama2", ChatFormat::Llama2},
                                                     {"llama3", ChatFormat::Llama3},
                                                     {"zephyr", ChatFormat::Zephyr},
                                                     {"gemma", ChatFormat::Gemma}};
  std::map<std::string, int> n_checked;
  for (const auto& c : goldens["builtin_chats"]) {
    const auto name = c["format"].get<std::string>();
    ASSERT_TRUE(formats.count(name)) << name;
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) {
      std::string content = m["content"].get<std::string>();
      // llama.cpp's built-in "gemma" trims system text; Gemma 3's own template, which fasa
      // follows (gemma3_golden_test.cpp), does not. Everything else must agree.
      if (name == "gemma" && m["role"] == "system") {
        content = content.substr(content.find_first_not_of(' '));
        content = content.substr(0, content.find_last_not_of(' ') + 1);
      }
      messages.push_back({m["role"].get<std::string>(), content});
    }
    const bool gen = c["add_generation_prompt"].get<bool>();
    EXPECT_EQ(render_chat(formats.at(name), messages, gen), c["text"].get<std::string>())
        << name << " add_generation_prompt=" << gen;
    ++n_checked[name];
  }
  for (const auto& [name, fmt] : formats) EXPECT_GE(n_checked[name], 4) << name;
}

}  // namespace
}  // namespace fasa
