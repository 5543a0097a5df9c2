// `fasa tokenize -m MODEL (-p TEXT | -f FILE|-) [--pieces] [--no-special] [--bos]`: token ids on one line.
// Reads only the tokenizer metadata, so it works for any architecture the file holds.
#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::cli {

namespace {

struct TokenizeArgs {
  std::string model;
  std::string prompt;
  std::string file;
  bool pieces = false;
  bool no_special = false;
  bool bos = false;
  bool has_prompt = false;
  bool has_file = false;
};

// A token's bytes with control characters escaped, for --pieces; a piece that is not whole UTF-8
// (a byte token, part of a character) shows all its non-ASCII bytes escaped.
std::string printable(const std::string& s) {
  const bool partial = find_invalid_utf8(s) >= 0;
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || (partial && c >= 0x80))
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

void run_tokenize(const TokenizeArgs& a) {
  if (a.has_prompt == a.has_file) fail("give exactly one of -p TEXT or -f FILE");
  const std::string text = a.has_file ? read_text_or_stdin(a.file) : a.prompt;
  const auto file = GgufFile::open(resolve_model_path(a.model));
  if (!file->find("tokenizer.ggml.model")) {
    fail("{}: the model file has no tokenizer metadata", file->path());
  }
  const auto tokenizer = Tokenizer::from_gguf(*file);
  const Tokenizer& tok = *tokenizer;
  const auto ids = tok.encode(text, a.bos, !a.no_special);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
  if (a.pieces) {
    for (int32_t id : ids) {
      std::printf("%d\t%s\n", id, printable(tok.token_to_bytes(id, true)).c_str());
    }
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  auto* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  cmd->add_option("-m,--model", args->model, "GGUF path or pulled model name")->required();
  auto* p = cmd->add_option("-p,--prompt", args->prompt, "text to tokenize");
  auto* f = cmd->add_option("-f,--file", args->file, "read the text from a file (-: stdin)");
  cmd->add_flag("--pieces", args->pieces, "also print each token's text, one per line");
  cmd->add_flag("--no-special", args->no_special,
                "treat special-token text (e.g. <|im_start|>) as plain text");
  cmd->add_flag("--bos", args->bos, "prepend BOS when the model uses one");
  cmd->callback([args, p, f] {
    args->has_prompt = p->count() > 0;
    args->has_file = f->count() > 0;
    run_tokenize(*args);
  });
}

}  // namespace fasa::cli
