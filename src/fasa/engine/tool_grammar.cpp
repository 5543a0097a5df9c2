#include "fasa/engine/tool_grammar.h"

#include <nlohmann/json.hpp>

#include "fasa/engine/grammar_compose.h"

namespace fasa {

namespace {

// One of the functions' call objects {"name": F, args_key: ARGS}.
int any_call(GrammarBuilder& b, const std::vector<ToolFunction>& fns, const ChatTools& tools,
             const char* args_key) {
  std::vector<int> calls;
  for (const ToolFunction& f : fns) {
    if (tools.choice == ToolChoice::Named && f.name != tools.named) continue;
    const int name = b.json_texts({nlohmann::json(f.name).dump()});
    calls.push_back(b.object({{"name", name}, {args_key, b.include(*f.params)}}));
  }
  return b.any_of(std::move(calls));
}

int hermes(GrammarBuilder& b, int call, bool parallel) {
  const int block = b.sequence({b.text("<tool_call>\n"), call, b.text("\n</tool_call>")});
  int calls = block;  // at most n blocks: block | block "\n" (at most n - 1 blocks)
  for (int n = 2; parallel && n <= kMaxParallelCalls; ++n) {
    calls = b.any_of({block, b.sequence({block, b.text("\n"), calls})});
  }
  return calls;
}

}  // namespace

std::shared_ptr<const Grammar> tool_call_grammar(ToolFormat tf,
                                                 const std::vector<ToolFunction>& fns,
                                                 const ChatTools& tools) {
  const bool must_call = tools.choice == ToolChoice::Required || tools.choice == ToolChoice::Named;
  if (fns.empty() || !tools.offered() || (!must_call && tf != ToolFormat::Generic)) return nullptr;
  GrammarBuilder b;
  int root = -1;
  switch (tf) {
    case ToolFormat::Hermes:
    case ToolFormat::HermesCoder:
      root = hermes(b, any_call(b, fns, tools, "arguments"), tools.parallel);
      break;
    case ToolFormat::Llama3: root = any_call(b, fns, tools, "parameters"); break;
    case ToolFormat::MistralV3:
      root = b.array(any_call(b, fns, tools, "arguments"), 1, tools.parallel ? -1 : 1);
      break;
    case ToolFormat::Generic:
      root = b.object({{"tool_call", any_call(b, fns, tools, "arguments")}});
      if (!must_call) root = b.any_of({root, b.object({{"response", b.string()}})});
      break;
  }
  return std::make_shared<const Grammar>(b.finish(root));
}

}  // namespace fasa
