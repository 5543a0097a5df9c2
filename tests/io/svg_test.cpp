// The SVG helpers (io/svg.h) and the tests' XML reader (support/xml_check.h) that every SVG
// writer's test parses its document with: the reader must refuse what is not well-formed, or
// those tests could not fail.
#include "fasa/io/svg.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/expect_error.h"
#include "support/svg_bounds.h"
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

// Text widths are estimated per character from above (DejaVu Sans's widths): a UTF-8 character
// counts once, wide letters more than narrow ones, and ordinary text at least the 0.55 em a
// character the SVG tests measure with (support/svg_bounds.h).
TEST(Svg, TextWidthIsEstimatedPerCharacter) {
  EXPECT_EQ(svg_text_width("", 12), 0.0);
  EXPECT_DOUBLE_EQ(svg_text_width("\xe2\x80\x94", 12), 12.0);  // an em dash: one character, 1 em
  EXPECT_DOUBLE_EQ(svg_text_width("aaaa", 10), 4 * 6.4);
  EXPECT_LT(svg_text_width("iiii", 10), svg_text_width("aaaa", 10));
  EXPECT_LT(svg_text_width("aaaa", 10), svg_text_width("AAAA", 10));
  EXPECT_LT(svg_text_width("AAAA", 10), svg_text_width("MMMM", 10));
  EXPECT_DOUBLE_EQ(svg_text_width("ab", 20), 2 * svg_text_width("ab", 10));
  for (const std::string t : {"Smollm2 135M 8k Lc100K Mix1 Ep2 — mean contextual agreement",
                              "frequency chunk (FC; 0 = highest frequency)", "layer 35", "0.00",
                              "KV bytes read per decoded token", "1024", "streaming"}) {
    EXPECT_GE(svg_text_width(t, 10), test::estimated_text_width(t, 10)) << t;
  }
}

// The tests' geometry reader (support/svg_bounds.h) finds each mark where it is drawn, or the
// layout tests built on it could not fail.
TEST(SvgBounds, BoxesOfEachMark) {
  const auto root = test::parse_xml(
      "<svg width=\"200\" height=\"100\" viewBox=\"0 0 200 100\" font-size=\"10\">"
      "<rect width=\"100%\" height=\"100%\"/><rect class=\"r\" x=\"5\" y=\"6\" width=\"10\" "
      "height=\"20\"/><line x1=\"50\" y1=\"9\" x2=\"40\" y2=\"3\"/>"
      "<g><circle cx=\"20\" cy=\"30\" r=\"4\"/></g><polyline points=\"1,2 30,40 7,8\"/>"
      "<path d=\"M10,20V5M8,20H12\"/><text x=\"100\" y=\"50\" text-anchor=\"middle\">abcd</text>"
      "<text x=\"16\" y=\"50\" font-size=\"20\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 50)\">ab</text></svg>");
  EXPECT_EQ(test::svg_view_size(root), (std::pair<double, double>{200, 100}));
  const auto b = test::svg_boxes(root);
  ASSERT_EQ(b.size(), 7u);  // the background rect is left out
  auto box = [](const test::SvgBox& x) { return std::vector<double>{x.x0, x.y0, x.x1, x.y1}; };
  EXPECT_EQ(box(b[0]), (std::vector<double>{5, 6, 15, 26}));
  EXPECT_EQ(b[0].cls, "r");
  EXPECT_EQ(box(b[1]), (std::vector<double>{40, 3, 50, 9}));
  EXPECT_EQ(box(b[2]), (std::vector<double>{16, 26, 24, 34}));
  EXPECT_EQ(box(b[3]), (std::vector<double>{1, 2, 30, 40}));
  EXPECT_EQ(box(b[4]), (std::vector<double>{8, 5, 12, 20}));
  EXPECT_EQ(b[5].text, "abcd");  // 4 characters of 5.5 px, centred; 8 px above the baseline
  EXPECT_EQ(box(b[5]), (std::vector<double>{89, 42, 111, 52.5}));
  // Turned a quarter: 22 px of text run upwards about (16, 50), 16 px left and 5 px right of it.
  EXPECT_NEAR(b[6].y0, 39, 1e-9);
  EXPECT_NEAR(b[6].y1, 61, 1e-9);
  EXPECT_NEAR(b[6].x0, 0, 1e-9);
  EXPECT_NEAR(b[6].x1, 21, 1e-9);
  // What it cannot read is an error, not a box in the wrong place.
  expect_error([] { test::svg_boxes(test::parse_xml("<svg><path d=\"M1,2C3,4\"/></svg>")); },
               "path command 'C'");
  expect_error([] { test::svg_boxes(test::parse_xml("<svg><rect width=\"x\"/></svg>")); },
               "not a number");
  expect_error([] { test::svg_view_size(test::parse_xml("<svg width=\"2\"/>")); }, "viewBox");
}

}  // namespace
}  // namespace fasa
