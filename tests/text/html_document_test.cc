#include "text/html_document.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/text/fake_translation.h"
#include "text/marked_text.h"

namespace transerve::text {
namespace {

using testing::GumboFindsNothingMissing;
using testing::NestsLikeStack;
using testing::TagMultiset;

enum class Mode { kIdentity, kUpper, kReverse };

// Every unit through the fake translator: blocks with InsertTags, attributes as plain text.
std::string Translate(const HtmlDocument& doc, Mode mode, uint32_t seed = 5) {
  std::vector<std::string> out;
  for (size_t u = 0; u < doc.units().size(); ++u) {
    const MarkedText& m = doc.units()[u];
    if (doc.IsAttribute(u)) {
      // Plain text, no tags: upper-cased (the word order of an attribute is no test).
      out.push_back(doc.EscapeAttribute(mode == Mode::kIdentity ? m.text : testing::Upper(m.text)));
      continue;
    }
    const AlignedTranslation t = mode == Mode::kIdentity ? testing::Identity(m.text, seed + u)
                                 : mode == Mode::kUpper  ? testing::Uppercased(m.text, seed + u)
                                                         : testing::Reversed(m.text, seed + u);
    out.push_back(InsertTags(m, t, [&](std::string_view s) { return doc.EscapeText(s); }));
  }
  return doc.Render(out);
}

// Whether every element of `part` is in `whole` (both sorted).
bool Includes(const std::vector<std::string>& whole, const std::vector<std::string>& part) {
  return std::includes(whole.begin(), whole.end(), part.begin(), part.end());
}

struct Case {
  const char* name;
  std::string html;
  // Every element closed in the source: the output must nest and gumbo must add nothing.
  bool closed = true;
  // Bytes that must come out unchanged whatever the translation.
  std::vector<std::string> kept = {};
  // The output for the word-order reversal, where the case pins it down.
  std::string reversed = "";
};

std::vector<Case> Cases() {
  return {
      {"plain", "<p>Hello there world.</p>", true, {}, "<p>WORLD. THERE HELLO</p>"},
      {"bold_word", "<p>The <b>red</b> house.</p>", true, {}, "<p>HOUSE. <b>RED</b> THE</p>"},
      {"nested",
       "<p>A <b>big <i>red</i> house</b> here.</p>",
       true,
       {},
       "<p>HERE. <b>HOUSE <i>RED</i> BIG</b> A</p>"},
      {"several_words",
       "<p>Please <em>read the manual</em> first.</p>",
       true,
       {},
       "<p>FIRST. <em>MANUAL THE READ</em> PLEASE</p>"},
      {"link_attributes",
       "<p>Go <a href=\"/x?a=1&amp;b=2\" class='c1  c2' data-x=y>to the site</a> now.</p>",
       true,
       {"<a href=\"/x?a=1&amp;b=2\" class='c1  c2' data-x=y>"},
       "<p>NOW. <a href=\"/x?a=1&amp;b=2\" class='c1  c2' data-x=y>SITE THE TO</a> GO</p>"},
      {"two_links",
       "<p><a href=\"1\">one</a> and <a href=\"2\">two</a></p>",
       true,
       {},
       "<p><a href=\"2\">TWO</a> AND <a href=\"1\">ONE</a></p>"},
      {"empty_element",
       "<p>a <span class=\"icon\"></span> b</p>",
       true,
       {"<span class=\"icon\"></span>"}},
      {"whole_text",
       "<p><strong>All of it here</strong></p>",
       true,
       {},
       "<p><strong>HERE IT OF ALL</strong></p>"},
      {"first_word", "<p><b>Open</b> the file</p>", true, {}, "<p>FILE THE <b>OPEN</b></p>"},
      {"last_word", "<p>Save the <i>file</i></p>", true, {}, "<p><i>FILE</i> THE SAVE</p>"},
      {"br_in_text", "<p>First line<br>second line</p>", true, {"<br>"}},
      {"br_with_spaces", "<p>One two <br> three four</p>", true, {"<br>"}},
      {"img_alt",
       "<p>See <img src=\"cat.png\" alt=\"a small cat\"> here.</p>",
       true,
       {"src=\"cat.png\""}},
      {"entities",
       "<p>Fish &amp; chips &lt;3 &gt; all&nbsp;day &copy; 2024 &mdash; ok</p>",
       true,
       {"&amp;", "&lt;", "&gt;", "&nbsp;", "&copy;", "&mdash;"}},
      {"numeric_entities", "<p>A&#8212;B and &#x263A; smile</p>", true, {"&#8212;", "&#x263A;"}},
      {"comment_in_text", "<p>Some <!-- a note --> text here</p>", true, {"<!-- a note -->"}},
      {"comment_between_blocks",
       "<p>One.</p><!-- between --><p>Two.</p>",
       true,
       {"<!-- between -->"},
       "<p>ONE.</p><!-- between --><p>TWO.</p>"},
      {"script",
       "<p>Hi.</p><script>if (a < b && c > d) { x = '<b>'; }</script><p>Bye.</p>",
       true,
       {"<script>if (a < b && c > d) { x = '<b>'; }</script>"}},
      {"style",
       "<style>p > b { color: red; }</style><p>Styled text</p>",
       true,
       {"<style>p > b { color: red; }</style>"}},
      {"pre",
       "<pre>  keep   this\n   as is &amp; </pre><p>but this</p>",
       true,
       {"<pre>  keep   this\n   as is &amp; </pre>"}},
      {"code_inline",
       "<p>Call <code>run(x)</code> to start it.</p>",
       true,
       {"<code>run(x)</code>"}},
      {"code_block",
       "<div><code>int main() { return 0; }</code></div><p>Text.</p>",
       true,
       {"<code>int main() { return 0; }</code>"}},
      {"translate_no",
       "<p>Use <span translate=\"no\">Brand Name</span> today.</p>",
       true,
       {"<span translate=\"no\">Brand Name</span>"}},
      {"notranslate_block",
       "<div class=\"x notranslate\"><p>Keep me</p></div><p>Change me</p>",
       true,
       {"<div class=\"x notranslate\"><p>Keep me</p></div>"},
       "<div class=\"x notranslate\"><p>Keep me</p></div><p>ME CHANGE</p>"},
      {"title_attribute", "<p title=\"A tip for you\">Body text</p>", true, {}},
      {"placeholder",
       "<form><input type=\"text\" placeholder='Your name'></form>",
       true,
       {"type=\"text\""}},
      {"aria_label", "<button aria-label=\"Close window\">X</button>", true, {}},
      {"list",
       "<ul><li>First item</li><li>Second <b>bold</b> item</li></ul>",
       true,
       {},
       "<ul><li>ITEM FIRST</li><li>ITEM <b>BOLD</b> SECOND</li></ul>"},
      {"list_omitted_ends",
       "<ol><li>one thing<li>another thing</ol>",
       false,
       {},
       "<ol><li>THING ONE<li>THING ANOTHER</ol>"},
      {"table",
       "<table><tr><th>Name</th><th>Age</th></tr><tr><td>John Smith</td><td>42</td></tr></table>",
       true,
       {}},
      {"omitted_p",
       "<p>First paragraph<p>Second paragraph",
       false,
       {},
       "<p>PARAGRAPH FIRST<p>PARAGRAPH SECOND"},
      {"omitted_inline_end", "<p>a <b>b c</p>", false, {}, "<p><b>C B</b> A</p>"},
      {"stray_end_tag", "<p>some </i> text</p>", false, {"</i>"}},
      {"misnested", "<p><b>x <i>y</b> z</i></p>", false, {}},
      {"xml_fragment",
       "<x:g id=\"1\">Hello</x:g> <x:g id=\"2\">world</x:g>",
       true,
       {},
       "<x:g id=\"2\">WORLD</x:g> <x:g id=\"1\">HELLO</x:g>"},
      {"self_closing_placeholder", "Press <ph id=\"1\"/> to continue", false, {"<ph id=\"1\"/>"}},
      {"self_closing_at_start", "<ph/>Start here now", false, {"<ph/>"}},
      {"non_ascii",
       "<p>\xC3\x9C"
       "ber <b>gro\xC3\x9F"
       "e</b> Stra\xC3\x9F"
       "en \xE6\x97\xA5\xE6\x9C\xAC \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7</p>",
       true,
       {}},
      {"doctype_document",
       "<!DOCTYPE html><html><head><title>Page title</title></head><body><p>Body "
       "text</p></body></html>",
       false,
       {"<!DOCTYPE html>"}},
      {"headings",
       "<h1>Main title</h1><h2>Sub title</h2><h3>Small title</h3>",
       true,
       {},
       "<h1>TITLE MAIN</h1><h2>TITLE SUB</h2><h3>TITLE SMALL</h3>"},
      {"blockquote",
       "<blockquote><p>Quoted words</p>said someone</blockquote>",
       true,
       {},
       "<blockquote><p>WORDS QUOTED</p>SOMEONE SAID</blockquote>"},
      {"definition_list", "<dl><dt>Term one</dt><dd>Its meaning</dd></dl>", true, {}},
      {"whitespace_only",
       "<div>\n  <p>Only this</p>\n  </div>",
       true,
       {"\n  <p>", "</p>\n  </div>"}},
      {"crlf", "<p>Line one\r\nline two</p>\r\n<p>Third</p>", true, {"\r\n"}},
      {"attribute_entity", "<p title=\"Tom &amp; Jerry\">Cartoon</p>", true, {}},
      {"upper_case_tags",
       "<P><B>Bold</B> Text</P>",
       true,
       {"<B>", "</B>"},
       "<P>TEXT <B>BOLD</B></P>"},
      {"textarea",
       "<textarea>raw <b>text</b> here</textarea><p>Label</p>",
       true,
       {"<textarea>raw <b>text</b> here</textarea>"}},
      {"textarea_placeholder",
       "<textarea placeholder=\"Type here\">raw &amp; text</textarea>",
       true,
       {"raw &amp; text</textarea>"}},
      {"code_title",
       "<p>Run <code title=\"the command\">ls -l</code> now</p>",
       true,
       {"ls -l</code>"}},
      {"select",
       "<select><option>Red one</option><option>Blue one</option></select>",
       true,
       {},
       "<select><option>ONE RED</option><option>ONE BLUE</option></select>"},
      {"label_input",
       "<label>Your email <input type=\"email\" name=\"e\"></label>",
       true,
       {"<input type=\"email\" name=\"e\">"}},
      {"figure",
       "<figure><img src=\"a.png\"><figcaption>A nice view</figcaption></figure>",
       true,
       {},
       "<figure><img src=\"a.png\"><figcaption>VIEW NICE A</figcaption></figure>"},
      {"sup", "<p>E = mc<sup>2</sup> says Einstein</p>", true, {}},
      {"nested_links", "<p><a href=\"1\">one <a href=\"2\">two</a></p>", false, {}},
      {"stray_end_tag_with_quote", "<p>a link</a1\">link</a> here</p>", false, {"</a1\">"}},
      {"whitespace_only_tag", "<p>one <b> </b> two</p>", true, {}},
      {"unclosed_whitespace_tag", "<div>text <tz>   <p>para</p></div>", false, {}},
      {"unquoted_attribute_with_equals", "<input placeholder=a=b>", true, {}},
      {"bare_ampersands", "<p>AT&T and R&D &cccc; &copyright</p>", true, {}},
      {"adjacent_tags", "<p><b>one</b><i>two</i> three</p>", true, {}},
      {"text_and_block_mixed",
       "<div>Intro text <p>inner para</p> outro text</div>",
       true,
       {},
       "<div>TEXT INTRO <p>PARA INNER</p> TEXT OUTRO</div>"},
  };
}

TEST(HtmlDocument, RoundTripIsByteExactOnEveryCase) {
  for (const Case& c : Cases()) {
    auto doc = HtmlDocument::Parse(c.html);
    ASSERT_TRUE(doc.ok()) << c.name << ": " << doc.status();
    EXPECT_EQ(Translate(*doc, Mode::kIdentity), c.html) << c.name;
    // No translations at all: the source, too.
    EXPECT_EQ(doc->Render({}), c.html) << c.name;
  }
}

TEST(HtmlDocument, TranslationKeepsEveryTagOnceAndNests) {
  for (const Case& c : Cases()) {
    auto doc = HtmlDocument::Parse(c.html);
    ASSERT_TRUE(doc.ok()) << c.name;
    for (Mode mode : {Mode::kUpper, Mode::kReverse}) {
      const std::string out = Translate(*doc, mode);
      const auto in_tags = TagMultiset(c.html), out_tags = TagMultiset(out);
      if (c.closed) {
        EXPECT_EQ(out_tags, in_tags) << c.name << ": " << out;
        EXPECT_TRUE(NestsLikeStack(out)) << c.name << ": " << out;
        EXPECT_TRUE(GumboFindsNothingMissing(out)) << c.name << ": " << out;
      } else {
        // End tags the source left out may be written where the words moved.
        EXPECT_TRUE(Includes(out_tags, in_tags)) << c.name << ": " << out;
      }
      for (const std::string& kept : c.kept) {
        EXPECT_NE(out.find(kept), std::string::npos) << c.name << ": " << kept << " in " << out;
      }
      if (mode == Mode::kUpper) {
        // Word order kept: the same markup, the text upper-cased.
        EXPECT_EQ(testing::MarkupTokens(testing::Upper(out)),
                  testing::MarkupTokens(testing::Upper(c.html)))
            << c.name << ": " << out;
      }
      if (mode == Mode::kReverse && !c.reversed.empty()) {
        EXPECT_EQ(out, c.reversed) << c.name;
      }
    }
  }
}

TEST(HtmlDocument, CasesAreMany) { EXPECT_GE(Cases().size(), 40u); }

TEST(HtmlDocument, UnitsAreBlocksAndTranslatableAttributes) {
  auto doc = HtmlDocument::Parse(
      "<div title=\"Tip &amp; trick\"><p>One <b>two</b></p><img alt='A cat' src=x>"
      "<p>  </p><script>var s;</script></div>");
  ASSERT_TRUE(doc.ok());
  std::vector<std::string> texts;
  std::vector<bool> attribute;
  for (size_t u = 0; u < doc->units().size(); ++u) {
    texts.push_back(doc->units()[u].text);
    attribute.push_back(doc->IsAttribute(u));
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"Tip & trick", "One two", "A cat"}));
  EXPECT_EQ(attribute, (std::vector<bool>{true, false, true}));
  ASSERT_EQ(doc->units()[1].tags.size(), 1u);
  EXPECT_EQ(doc->units()[1].tags[0].open, "<b>");
  EXPECT_EQ(doc->units()[1].tags[0].close, "</b>");
  EXPECT_EQ(doc->units()[1].tags[0].range, (ByteRange{4, 7}));
}

TEST(HtmlDocument, UntranslatedElementsKeepTranslatableAttributesUnlessTranslateNo) {
  auto doc = HtmlDocument::Parse(
      "<textarea placeholder=\"Type here\">x</textarea><p>Run <code title=\"a tip\">ls</code> "
      "now</p><span translate=\"no\" title=\"keep\">k</span>");
  ASSERT_TRUE(doc.ok());
  std::vector<std::string> texts;
  for (const MarkedText& m : doc->units()) texts.push_back(m.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"Type here", "Run  now", "a tip"}));
  EXPECT_EQ(Translate(*doc, Mode::kUpper),
            "<textarea placeholder=\"TYPE HERE\">x</textarea><p>RUN <code title=\"A TIP\">ls</code>"
            "NOW</p><span translate=\"no\" title=\"keep\">k</span>");
  // (The fake translator writes one space where the source had two, around the code: the code
  // goes after it. InsertTags never adds text.)
}

TEST(HtmlDocument, ElementsTheCallerNamesAreKeptAsTranslateNoIs) {
  const std::string html =
      "<p>Open <x id=\"1\">%s file</x> now</p><P>Keep <X>this</X> and <y>that</y></P>";
  auto doc = HtmlDocument::Parse(html, {"x"});
  ASSERT_TRUE(doc.ok());
  std::vector<std::string> texts;
  for (const MarkedText& m : doc->units()) texts.push_back(m.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"Open  now", "Keep  and that"}));
  const std::string out = Translate(*doc, Mode::kUpper);
  EXPECT_NE(out.find("<x id=\"1\">%s file</x>"), std::string::npos) << out;
  EXPECT_NE(out.find("<X>this</X>"), std::string::npos) << out;
  EXPECT_NE(out.find("<y>THAT</y>"), std::string::npos) << out;
  // Without the name, the same element's words are translated.
  auto plain = HtmlDocument::Parse(html);
  ASSERT_TRUE(plain.ok());
  EXPECT_NE(Translate(*plain, Mode::kUpper).find("FILE"), std::string::npos);
}

TEST(HtmlDocument, OmittedEndTagIsWrittenOnlyWhereTheWordsMoved) {
  auto doc = HtmlDocument::Parse("<p>a <b>b c</p>");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->units().size(), 1u);
  EXPECT_EQ(doc->units()[0].tags[0].close, "</b>");
  // b's words moved to the front: its end tag now has to be there.
  EXPECT_EQ(Translate(*doc, Mode::kReverse), "<p><b>C B</b> A</p>");
  EXPECT_EQ(Translate(*doc, Mode::kUpper), "<p>A <b>B C</p>");
}

TEST(HtmlDocument, LineBreakBetweenWordsSeparatesThemForTheModel) {
  auto doc = HtmlDocument::Parse("<p>First line<br>second line<br/></p>");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->units().size(), 1u);
  EXPECT_EQ(doc->units()[0].text, "First line\nsecond line\n");
  // Words reversed: the first break follows the word it followed, the last stays at the end.
  EXPECT_EQ(Translate(*doc, Mode::kReverse), "<p>LINE SECOND LINE <br>FIRST<br/></p>");
  EXPECT_EQ(Translate(*doc, Mode::kUpper), "<p>FIRST LINE <br>SECOND LINE<br/></p>");
}

TEST(HtmlDocument, InlineCodeIsOneUntranslatedVoidTag) {
  auto doc = HtmlDocument::Parse("<p>Call <code>run(x)</code> now</p>");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->units().size(), 1u);
  EXPECT_EQ(doc->units()[0].text, "Call  now");
  ASSERT_EQ(doc->units()[0].tags.size(), 1u);
  EXPECT_TRUE(doc->units()[0].tags[0].is_void());
  EXPECT_EQ(doc->units()[0].tags[0].open, "<code>run(x)</code>");
}

TEST(HtmlDocument, SelfClosedUnknownElementIsAVoidTag) {
  auto doc = HtmlDocument::Parse("<p>Press <ph id=\"1\"/> now or <x:ph/> later</p>");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->units().size(), 1u);
  const MarkedText& m = doc->units()[0];
  EXPECT_EQ(m.text, "Press  now or  later");
  ASSERT_EQ(m.tags.size(), 2u);
  EXPECT_EQ(m.tags[0].open, "<ph id=\"1\"/>");
  EXPECT_TRUE(m.tags[0].is_void());
  EXPECT_EQ(m.tags[1].open, "<x:ph/>");
  EXPECT_TRUE(m.tags[1].is_void());
}

TEST(HtmlDocument, AttributesGoBackInTheirQuotes) {
  auto doc = HtmlDocument::Parse("<p title='say \"hi\"' >x y</p><img alt=bare><img alt=\"q\">");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->units().size(), 4u);
  std::vector<std::string> tr(4);
  tr[0] = doc->EscapeAttribute("it's \"x\"");
  tr[1] = "X Y";
  tr[2] = doc->EscapeAttribute("now two words");
  tr[3] = doc->EscapeAttribute("a \"b\"");
  EXPECT_EQ(doc->Render(tr),
            "<p title='it&#39;s \"x\"' >X Y</p><img alt=\"now two words\"><img "
            "alt=\"a &quot;b&quot;\">");
}

TEST(HtmlDocument, EscapeWritesEntitiesAsTheSourceSpelledThem) {
  auto doc = HtmlDocument::Parse("<p>a&nbsp;b &copy; c &#8212; d & e</p>");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->EscapeText("x\xC2\xA0y \xC2\xA9 \xE2\x80\x94 <&> &amp"),
            "x&nbsp;y &copy; &#8212; &lt;&&gt; &amp;amp");
  // The source wrote a bare "&": kept bare where it cannot start a reference (&copy2 would).
  EXPECT_EQ(doc->EscapeText("& &x &copy2 &lt;"), "& &x &amp;copy2 &amp;lt;");
  // A character the source never wrote as an entity stays as it is.
  EXPECT_EQ(doc->EscapeText("\xC3\xA9"), "\xC3\xA9");
}

TEST(HtmlDocument, NestingTooDeepIsInvalidArgument) {
  std::string html;
  for (int i = 0; i < 300; ++i) html += "<div>";
  html += "deep";
  const auto doc = HtmlDocument::Parse(html);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  std::string ok;
  for (int i = 0; i < 100; ++i) ok += "<span>";
  EXPECT_TRUE(HtmlDocument::Parse(ok + "fine").ok());
}

// Random documents of blocks and inline tags, translated with random word orders: every tag
// exactly once, well-formed, and the identity gives the source back.
TEST(HtmlDocument, RandomDocumentsStayWellFormed) {
  std::mt19937 rng(4242);
  const std::vector<std::string> words = {"alpha",        "beta", "gamma",   "&amp;",
                                          "d\xC3\xA9lta", "eps.", "&nbsp;z", "\xE6\x97\xA5"};
  const std::vector<std::string> inline_tags = {"b", "i", "em", "a href=\"#\"", "span"};
  const std::vector<std::string> blocks = {"p", "div", "li", "td"};
  for (int round = 0; round < 2000; ++round) {
    std::string html;
    for (int b = 1 + static_cast<int>(rng() % 3); b > 0; --b) {
      const std::string block = blocks[rng() % blocks.size()];
      html += "<" + block + ">";
      std::vector<std::string> open;
      for (int w = 1 + static_cast<int>(rng() % 8); w > 0; --w) {
        const int what = static_cast<int>(rng() % 5);
        const std::string t = inline_tags[rng() % inline_tags.size()];
        // (A link inside a link is no HTML: the parser closes the first.)
        const bool nested_link =
            t[0] == 'a' && std::find(open.begin(), open.end(), "a") != open.end();
        if (what == 0 && open.size() < 5 && !nested_link) {
          html += "<" + t + ">";
          open.push_back(t.substr(0, t.find(' ')));
        } else if (what == 1 && !open.empty()) {
          html += "</" + open.back() + ">";
          open.pop_back();
        } else if (what == 2) {
          html += rng() % 2 ? "<br>" : "<img alt=\"pic\">";
        }
        html += words[rng() % words.size()] + " ";
      }
      while (!open.empty()) {
        html += "</" + open.back() + ">";
        open.pop_back();
      }
      html += "</" + block + ">";
    }
    auto doc = HtmlDocument::Parse(html);
    ASSERT_TRUE(doc.ok()) << html;
    ASSERT_EQ(Translate(*doc, Mode::kIdentity, rng()), html);
    for (Mode mode : {Mode::kUpper, Mode::kReverse}) {
      const std::string out = Translate(*doc, mode, rng());
      ASSERT_EQ(TagMultiset(out), TagMultiset(html)) << html << "\n" << out;
      ASSERT_TRUE(NestsLikeStack(out)) << html << "\n" << out;
    }
  }
}

}  // namespace
}  // namespace transerve::text
