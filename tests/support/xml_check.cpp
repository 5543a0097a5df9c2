#include "support/xml_check.h"

#include <cstdint>
#include <string_view>

#include "fasa/core/error.h"

namespace fasa::test {

namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// UTF-8 bytes of code point `cp`.
void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Reader {
 public:
  explicit Reader(const std::string& doc) : d_(doc) {}

  XmlElement document() {
    misc();
    if (!peek("<") || at_ + 1 >= d_.size() || !name_start(d_[at_ + 1]))
      bad("expected the root element");
    XmlElement root = element();
    misc();
    if (at_ != d_.size()) bad("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail("malformed XML at byte {}: {}", at_, why);
  }
  bool peek(std::string_view s) const { return d_.compare(at_, s.size(), s) == 0; }
  void expect(std::string_view s) {
    if (!peek(s)) bad("expected '" + std::string(s) + "'");
    at_ += s.size();
  }
  void skip_space() {
    while (at_ < d_.size() && space(d_[at_])) ++at_;
  }
  void skip_until(std::string_view end, const char* what) {
    const size_t e = d_.find(end, at_);
    if (e == std::string::npos) bad(std::string("unterminated ") + what);
    at_ = e + end.size();
  }
  // White space, comments and processing instructions (<?xml ...?>) around the root.
  void misc() {
    for (;;) {
      skip_space();
      if (peek("<!--")) {
        skip_until("-->", "comment");
      } else if (peek("<?")) {
        skip_until("?>", "processing instruction");
      } else {
        return;
      }
    }
  }
  std::string name() {
    if (at_ >= d_.size() || !name_start(d_[at_])) bad("expected a name");
    const size_t b = at_;
    while (at_ < d_.size() && name_char(d_[at_])) ++at_;
    return d_.substr(b, at_ - b);
  }
  // An entity or character reference at '&', decoded onto `out`.
  void reference(std::string& out) {
    const size_t semi = d_.find(';', at_);
    if (semi == std::string::npos || semi - at_ > 12) bad("unterminated entity");
    const std::string ent = d_.substr(at_ + 1, semi - at_ - 1);
    static const std::map<std::string, char> kNamed = {{"amp", '&'},
                                                       {"lt", '<'},
                                                       {"gt", '>'},
                                                       {"quot", '"'},
                                                       {"apos", '\''}};
    if (auto it = kNamed.find(ent); it != kNamed.end()) {
      out += it->second;
    } else if (ent.size() >= 2 && ent[0] == '#') {
      const bool hex = ent[1] == 'x';
      const std::string digits = ent.substr(hex ? 2 : 1);
      if (digits.empty() || digits.find_first_not_of(hex ? "0123456789abcdefABCDEF"
                                                         : "0123456789") != std::string::npos) {
        bad("bad character reference '&" + ent + ";'");
      }
      append_utf8(out, static_cast<uint32_t>(std::stoul(digits, nullptr, hex ? 16 : 10)));
    } else {
      bad("unknown entity '&" + ent + ";'");
    }
    at_ = semi + 1;
  }
  void check_char(char c) const {
    if (static_cast<unsigned char>(c) < 0x20 && !space(c)) bad("a control character");
  }
  std::string attr_value() {
    if (at_ >= d_.size() || (d_[at_] != '"' && d_[at_] != '\'')) bad("unquoted attribute value");
    const char q = d_[at_++];
    std::string v;
    for (;;) {
      if (at_ >= d_.size()) bad("unterminated attribute value");
      const char c = d_[at_];
      if (c == q) break;
      if (c == '<') bad("'<' in an attribute value");
      if (c == '&') {
        reference(v);
      } else {
        check_char(c);
        v += c;
        ++at_;
      }
    }
    ++at_;
    return v;
  }
  XmlElement element() {
    expect("<");
    XmlElement e;
    e.name = name();
    for (;;) {
      const size_t before = at_;
      skip_space();
      if (peek("/>")) {
        at_ += 2;
        return e;
      }
      if (peek(">")) {
        ++at_;
        break;
      }
      if (at_ == before) bad("expected white space before an attribute");
      const std::string key = name();
      skip_space();
      expect("=");
      skip_space();
      if (!e.attrs.emplace(key, attr_value()).second) bad("attribute '" + key + "' repeated");
    }
    content(e);
    expect("</");
    const std::string close = name();
    if (close != e.name) bad("</" + close + "> closes <" + e.name + ">");
    skip_space();
    expect(">");
    return e;
  }
  void content(XmlElement& e) {
    for (;;) {
      if (at_ >= d_.size()) bad("<" + e.name + "> is never closed");
      if (peek("</")) return;
      if (peek("<!--")) {
        skip_until("-->", "comment");
      } else if (peek("<![CDATA[")) {
        const size_t b = at_ + 9;
        skip_until("]]>", "CDATA section");
        e.text += d_.substr(b, at_ - 3 - b);
      } else if (peek("<")) {
        e.children.push_back(element());
      } else if (peek("&")) {
        reference(e.text);
      } else {
        if (peek("]]>")) bad("']]>' in text");
        check_char(d_[at_]);
        e.text += d_[at_++];
      }
    }
  }

  const std::string& d_;
  size_t at_ = 0;
};

}  // namespace

std::string XmlElement::attr(const std::string& key) const {
  const auto it = attrs.find(key);
  return it == attrs.end() ? "" : it->second;
}

std::vector<const XmlElement*> XmlElement::find_all(
    const std::function<bool(const XmlElement&)>& keep) const {
  std::vector<const XmlElement*> out;
  std::function<void(const XmlElement&)> walk = [&](const XmlElement& e) {
    if (keep(e)) out.push_back(&e);
    for (const auto& c : e.children) walk(c);
  };
  walk(*this);
  return out;
}

std::vector<const XmlElement*> XmlElement::find_all(const std::string& tag,
                                                    const std::string& cls) const {
  return find_all([&](const XmlElement& e) {
    return e.name == tag && (cls.empty() || e.attr("class") == cls);
  });
}

std::vector<std::string> XmlElement::texts(const std::string& cls) const {
  std::vector<std::string> out;
  for (const XmlElement* e : find_all("text", cls)) out.push_back(e->text);
  return out;
}

XmlElement parse_xml(const std::string& doc) { return Reader(doc).document(); }

}  // namespace fasa::test
