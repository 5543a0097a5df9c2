// A small strict XML reader for tests of the SVG writers: it accepts a well-formed document
// (one root element, balanced and properly nested tags, quoted and unique attributes, only the
// five named entities and numeric character references, no raw '<' or '&' in text, nothing but
// comments, processing instructions and white space around the root) and returns its element
// tree with entities decoded. Anything else is a fasa::Error naming the byte offset.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fasa::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // the character data directly inside (children's text not included)
  std::vector<XmlElement> children;

  // The attribute's value, or "" when absent.
  std::string attr(const std::string& key) const;
  // Every element below (and including) this one, depth first, for which `keep` holds.
  std::vector<const XmlElement*> find_all(const std::function<bool(const XmlElement&)>& keep) const;
  // Elements named `tag`, and of class `cls` when it is not empty.
  std::vector<const XmlElement*> find_all(const std::string& tag,
                                          const std::string& cls = "") const;
  // The texts of the <text> elements of class `cls` (all of them when `cls` is empty).
  std::vector<std::string> texts(const std::string& cls = "") const;
};

XmlElement parse_xml(const std::string& doc);

}  // namespace fasa::test
