#include "fasa/engine/grammar_compose.h"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

namespace fasa {

using Kind = GrammarNode::Kind;

int GrammarBuilder::add(GrammarNode n) {
  if (n.where.empty()) n.where = "(tool call)";
  g_.nodes.push_back(std::move(n));
  return static_cast<int>(g_.nodes.size()) - 1;
}

int GrammarBuilder::include(const Grammar& g) {
  FASA_CHECK(g.json);
  const int base = static_cast<int>(g_.nodes.size());
  const auto shift = [base](int id) { return id < 0 ? id : id + base; };
  for (GrammarNode n : g.nodes) {
    for (GrammarNode::Property& p : n.props) p.node = shift(p.node);
    n.extra = shift(n.extra);
    n.items = shift(n.items);
    for (int& a : n.alts) a = shift(a);
    for (int& p : n.parts) p = shift(p);
    g_.nodes.push_back(std::move(n));
  }
  return g.root + base;
}

int GrammarBuilder::text(const std::string& s) {
  FASA_CHECK(!s.empty());
  GrammarNode n;
  n.kind = Kind::Literal;
  n.texts = {s};
  n.raw = true;
  return add(std::move(n));
}

int GrammarBuilder::json_texts(std::vector<std::string> texts) {
  FASA_CHECK(!texts.empty());
  GrammarNode n;
  n.kind = Kind::Literal;
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  n.texts = std::move(texts);
  return add(std::move(n));
}

int GrammarBuilder::string() {
  GrammarNode n;
  n.kind = Kind::String;
  return add(std::move(n));
}

int GrammarBuilder::object(const std::vector<std::pair<std::string, int>>& props) {
  GrammarNode n;
  n.kind = Kind::Object;
  for (const auto& [name, node] : props) {
    n.props.push_back({nlohmann::json(name).dump(), node, true});
  }
  n.key_order.resize(n.props.size());
  std::iota(n.key_order.begin(), n.key_order.end(), 0);
  std::sort(n.key_order.begin(), n.key_order.end(),
            [&](int a, int b) { return n.props[a].key < n.props[b].key; });
  n.first_required.resize(n.props.size() + 1);
  std::iota(n.first_required.begin(), n.first_required.end(), 0);  // every one is required
  return add(std::move(n));
}

int GrammarBuilder::array(int items, int min_items, int max_items) {
  GrammarNode n;
  n.kind = Kind::Array;
  n.items = items;
  n.min_items = min_items;
  n.max_items = max_items;
  return add(std::move(n));
}

int GrammarBuilder::sequence(std::vector<int> parts) {
  FASA_CHECK(!parts.empty());
  GrammarNode n;
  n.kind = Kind::Sequence;
  n.raw = g_.nodes[parts[0]].raw;
  n.parts = std::move(parts);
  return add(std::move(n));
}

int GrammarBuilder::any_of(std::vector<int> alts) {
  FASA_CHECK(!alts.empty());
  GrammarNode n;
  n.kind = Kind::AnyOf;
  n.raw = std::all_of(alts.begin(), alts.end(), [&](int a) { return g_.nodes[a].raw; });
  n.alts = std::move(alts);
  return add(std::move(n));
}

Grammar GrammarBuilder::finish(int root) {
  g_.root = root;
  g_.json = true;
  mark_finite(g_);
  if (!g_.finite[root]) fail("the grammar has no value of finite length");
  return std::move(g_);
}

}  // namespace fasa
