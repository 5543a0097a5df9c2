// The SVG helpers (io/svg.h) and the tests' XML reader (support/xml_check.h) that every SVG
// writer's test parses its document with: the reader must refuse what is not well-formed, or
// those tests could not fail.
#include "fasa/io/svg.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/expect_error.h"
#include "support/temp_files.h"
#include "support/xml_check.h"

namespace fasa {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::parse_xml;

TEST(XmlCheck, ReadsAWellFormedDocument) {
  const auto root = parse_xml(
      "<?xml version=\"1.0\"?>\n<!-- c -->\n<svg a=\"1\" b='x &amp; y'>\n"
      "<g class=\"series\"><circle class=\"point\"/><circle class=\"point\" /></g>\n"
      "<text class=\"title\">a &lt; b &#65;&#x42; — ok</text><![CDATA[<raw>]]></svg>\n");
  EXPECT_EQ(root.name, "svg");
  EXPECT_EQ(root.attr("b"), "x & y");
  EXPECT_EQ(root.find_all("circle", "point").size(), 2u);
  EXPECT_EQ(root.find_all("g", "series").size(), 1u);
  ASSERT_EQ(root.texts("title").size(), 1u);
  EXPECT_EQ(root.texts("title")[0], "a < b AB — ok");
}

TEST(XmlCheck, RefusesWhatIsNotWellFormed) {
  const char* bad[] = {
      "",                         // no root
      "<a><b></a></b>",           // crossed tags
      "<a><b></b>",               // never closed
      "<a></a><b></b>",           // two roots
      "<a>x < y</a>",             // raw '<' in text
      "<a>fish & chips</a>",      // raw '&'
      "<a>&nbsp;</a>",            // an entity XML does not define
      "<a x=1></a>",              // unquoted attribute
      "<a x=\"1\" x=\"2\"></a>",  // repeated attribute
      "<a x=\"1\"y=\"2\"></a>",   // no space between attributes
      "<a x=\"<\"></a>",          // '<' in an attribute
      "<a>\x01</a>",              // a control character
      "<a></a>trailing",          // text after the root
  };
  for (const char* doc : bad) expect_error([&] { parse_xml(doc); }, "malformed XML");
}

TEST(Svg, EscapeRoundTripsThroughAnXmlReader) {
  const std::string raw = "<b> & \"q\" 'a' — \x01\x1f tab\tend";
  const std::string doc =
      "<svg><text a=\"" + svg_escape(raw) + "\">" + svg_escape(raw) + "</text></svg>";
  const auto root = parse_xml(doc);
  const std::string want = "<b> & \"q\" 'a' — ?? tab\tend";  // control characters become '?'
  EXPECT_EQ(root.children.at(0).text, want);
  EXPECT_EQ(root.children.at(0).attr("a"), want);
}

TEST(Svg, WriteFileNeedsAnSvgNameAndAWritablePlace) {
  const fs::path dir = test::fresh_dir("svg_write");
  const std::string doc = "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n";
  write_svg_file((dir / "a.svg").string(), doc);
  EXPECT_EQ(test::slurp(dir / "a.svg"), doc);
  // Another extension: one error that says what to give (and how to get a PNG); nothing written.
  expect_error([&] { write_svg_file((dir / "a.png").string(), doc); }, "ending in .svg");
  expect_error([&] { write_svg_file((dir / "a.png").string(), doc); }, "rsvg-convert");
  EXPECT_FALSE(fs::exists(dir / "a.png"));
  expect_error([&] { write_svg_file((dir / "svg").string(), doc); }, "ending in .svg");
  // A directory that does not exist, and a target that is a directory: errors naming the path.
  expect_error([&] { write_svg_file((dir / "missing" / "b.svg").string(), doc); },
               (dir / "missing" / "b.svg").string());
  fs::create_directory(dir / "d.svg");
  expect_error([&] { write_svg_file((dir / "d.svg").string(), doc); }, "is a directory");
  EXPECT_EQ(test::names_in(dir), (std::vector<std::string>{"a.svg", "d.svg"}));
}

}  // namespace
}  // namespace fasa
