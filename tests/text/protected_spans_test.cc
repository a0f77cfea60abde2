#include "text/protected_spans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace transerve::text {
namespace {

std::string Slice(const std::string& s, ByteRange r) { return s.substr(r.begin, r.end - r.begin); }

char KindLetter(SpanKind k) {
  switch (k) {
    case SpanKind::kFormatSpecifier:
      return 'F';
    case SpanKind::kUrl:
      return 'U';
    case SpanKind::kEmail:
      return 'E';
    case SpanKind::kPath:
      return 'P';
    case SpanKind::kCallerTerm:
      return 'C';
    case SpanKind::kGlossaryTerm:
      return 'G';
  }
  return '?';
}

// "F:%s" per span, in order.
std::vector<std::string> Found(const std::string& text, const ProtectOptions& options = {}) {
  std::vector<std::string> out;
  for (const ProtectedSpan& s : FindProtectedSpans(text, options)) {
    out.push_back(std::string(1, KindLetter(s.kind)) + ":" + Slice(text, s.range));
  }
  return out;
}

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

struct DetectionCase {
  const char* name;
  const char* text;
  std::vector<std::string> spans;
};

class Detection : public testing::TestWithParam<DetectionCase> {};

TEST_P(Detection, FindsExactlyTheseSpans) {
  EXPECT_EQ(Found(GetParam().text), GetParam().spans) << GetParam().text;
}

const DetectionCase kDetectionCases[] = {
    // printf and friends
    {"PrintfBasic", "Copied %d files to %s.", {"F:%d", "F:%s"}},
    {"PrintfPrecision", "The value %5.2f is out of range.", {"F:%5.2f"}},
    {"PrintfLeftAligned", "Name: %-10s|", {"F:%-10s"}},
    {"PrintfLength", "%lu bytes, %lld blocks, %zu items", {"F:%lu", "F:%lld", "F:%zu"}},
    {"PrintfPositional", "Move %2$s before %1$s", {"F:%2$s", "F:%1$s"}},
    {"PrintfStarWidth", "Pad %*d and %.*s here", {"F:%*d", "F:%.*s"}},
    {"LiteralPercent", "50%% done", {"F:%%"}},
    {"TouchingSpecifiersMerge", "Progress: %d%%", {"F:%d%%"}},
    {"PythonNamed",
     "Welcome, %(user)s! You have %(count)5d messages.",
     {"F:%(user)s", "F:%(count)5d"}},
    {"ObjC", "Could not open %@ for writing.", {"F:%@"}},
    {"Qt", "Error %1 occurred while reading %2.", {"F:%1", "F:%2"}},
    {"QtLocalised", "Total: %L1 files", {"F:%L1"}},
    {"GlibcAndGccAndWide", "open %s: %m, at %qs, name %1$S", {"F:%s", "F:%m", "F:%qs", "F:%1$S"}},
    {"SpecifierGluedToText", "-s%s is not allowed", {"F:%s"}},
    // braces and templates
    {"BraceIndex", "Press {0} to continue or {1} to cancel.", {"F:{0}", "F:{1}"}},
    {"BraceName", "Hello {name}, welcome.", {"F:{name}"}},
    {"BraceFormat",
     "Total: {0:N2} EUR, {1,-10} and {when:%Y-%m-%d}",
     {"F:{0:N2}", "F:{1,-10}", "F:{when:%Y-%m-%d}"}},
    {"BraceEmptyAndAttribute",
     "Got {} from {user.name} ({0!r})",
     {"F:{}", "F:{user.name}", "F:{0!r}"}},
    {"BraceEscapes", "Write {{ for {, }} for }", {"F:{{", "F:}}"}},
    {"Template", "Hello {{ user.name }}, bye {{x}}.", {"F:{{ user.name }}", "F:{{x}}"}},
    {"BraceWithSpacesIsText", "the set { a, b } is empty", {}},
    // shell variables
    {"ShellVariables",
     "Set $HOME, ${XDG_CONFIG_HOME} and $1 first.",
     {"F:$HOME", "F:${XDG_CONFIG_HOME}", "F:$1"}},
    {"CommandSubstitution", "Run it on $(uname -r) kernels.", {"F:$(uname -r)"}},
    {"MoneyIsText", "It costs $10 or $5.00 a month.", {}},
    {"VariableThenPathMerge", "Install into ${HOME}/bin now.", {"F:${HOME}/bin"}},
    // URLs
    {"UrlTrailingPeriod",
     "See https://example.com/docs/install.html.",
     {"U:https://example.com/docs/install.html"}},
    {"UrlInParentheses", "Docs (see http://example.org/a) are here.", {"U:http://example.org/a"}},
    {"UrlBalancedParenthesis",
     "Read https://en.wikipedia.org/wiki/Foo_(bar).",
     {"U:https://en.wikipedia.org/wiki/Foo_(bar)"}},
    {"UrlWww", "Visit www.example.org, then log in.", {"U:www.example.org"}},
    {"UrlSchemes",
     "ftp://ftp.gnu.org/gnu/ and file:///etc/hosts and MAILTO:bugs@example.org!",
     {"U:ftp://ftp.gnu.org/gnu/", "U:file:///etc/hosts", "U:MAILTO:bugs@example.org"}},
    {"UrlWithPercentEscapeIsOneSpan",
     "Open https://example.com/a%20b?q=%s&x=1 now",
     {"U:https://example.com/a%20b?q=%s&x=1"}},
    {"UrlWithUserIsOneSpan",
     "Clone https://user@git.example.org/repo.git today",
     {"U:https://user@git.example.org/repo.git"}},
    {"UrlInGermanQuotes",
     "Siehe \xE2\x80\x9Ehttps://example.de/x\xE2\x80\x9C.",
     {"U:https://example.de/x"}},
    {"UrlInAngleBrackets", "Found at <https://ardour.org/>.", {"U:https://ardour.org/"}},
    {"BareWwwIsText", "The www. prefix and http:// alone", {}},
    // e-mail
    {"EmailTrailingPeriod", "Send bugs to bugs@example.org.", {"E:bugs@example.org"}},
    {"EmailPlusAndDots",
     "Mail jane.doe+deb@lists.debian.org about it.",
     {"E:jane.doe+deb@lists.debian.org"}},
    {"EmailNeedsDottedDomain", "Log in as root@localhost or a@b.c please", {}},
    {"AtSignAloneIsText", "Ping @maintainer at 5 @ noon", {}},
    // paths
    {"AbsolutePath",
     "Edit /etc/transerve/server.conf and restart.",
     {"P:/etc/transerve/server.conf"}},
    {"HomeAndRelativePaths",
     "Copy ~/.config to ./run.sh or ../lib/a.so",
     {"P:~/.config", "P:./run.sh", "P:../lib/a.so"}},
    {"SingleComponentPath", "Mount it on /mnt or /srv.", {"P:/mnt", "P:/srv"}},
    {"WindowsPaths",
     "Open C:\\Users\\admin\\report.txt or \\\\server\\share.",
     {"P:C:\\Users\\admin\\report.txt", "P:\\\\server\\share"}},
    {"BareFileNames",
     "Read README.md, then edit server.conf and unpack file.tar.gz.",
     {"P:README.md", "P:server.conf", "P:file.tar.gz"}},
    {"PathInQuotes", "Cannot open '/etc/passwd': denied", {"P:/etc/passwd"}},
    {"PathBeforeGuillemet", "Datei \xC2\xBB/etc/hosts\xC2\xAB fehlt", {"P:/etc/hosts"}},
    // prose that must stay prose
    {"AndOrIsText", "Use the mouse and/or the keyboard at 100 km/h, 1/2 of it.", {}},
    {"AbbreviationsAreText", "Use e.g. a cable, i.e. a wire, Mr. Smith said.", {}},
    {"PercentInProseIsText", "50% of users, 100%sure, 50%off and 20 % more", {}},
    {"MeasurementsAreText", "It is 3.5 mm wide, version 2.0.1.", {}},
    {"SlashAloneAndHtmlAreText", "a / b and </b> and <big>x</big> and /s", {}},
    {"ModesAndPromptsAreText", "mode /000, prompt C:\\> and 600 B.C. or Foo.Md", {}},
    {"UpperCaseExtension", "Copy DSC00001.JPG now", {"P:DSC00001.JPG"}},
    {"DotRunsAndHexAreText", "Hangup..........H and 02000000.H and FFFF.H", {}},
    {"EscapedNewlineIsNoUncPath",
     "Line one\\\\nline two \\\\The end, but \\\\srv\\share is one",
     {"P:\\\\srv\\share"}},
    {"MenuPathIsText", "Choose /_View/_Go to jump", {}},
    {"RefAfterTagIsText", "set refs/remotes/<name>/HEAD", {}},
    // mixtures
    {"SeveralKinds",
     "Send %s to bugs@example.org or see https://example.org/faq.",
     {"F:%s", "E:bugs@example.org", "U:https://example.org/faq"}},
    {"PathAndSpecifier",
     "Could not write %d bytes to /var/log/app.log: %s",
     {"F:%d", "P:/var/log/app.log", "F:%s"}},
};

INSTANTIATE_TEST_SUITE_P(ProtectedSpans, Detection, testing::ValuesIn(kDetectionCases),
                         [](const testing::TestParamInfo<DetectionCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(CallerTerms, LongestFirstAndNeverInsideAWord) {
  ProtectOptions o;
  o.caller_terms = KeptTerms({"Transerve", "Transerve Pro", "Pro"});
  EXPECT_EQ(Found("Open Transerve Pro, not Transerved or a Product. Pro!", o),
            (std::vector<std::string>{"C:Transerve Pro", "C:Pro"}));
}

TEST(CallerTerms, CaseSensitiveAndEmptyTermsIgnored) {
  ProtectOptions o;
  o.caller_terms = KeptTerms({"", "GNOME"});
  EXPECT_EQ(Found("gnome and GNOME", o), (std::vector<std::string>{"C:GNOME"}));
}

TEST(CallerTerms, NonWordEdgesMayTouchWords) {
  ProtectOptions o;
  o.caller_terms = KeptTerms({"C++"});
  EXPECT_EQ(Found("Learn C++, then C++17.", o), (std::vector<std::string>{"C:C++", "C:C++"}));
}

TEST(CallerTerms, DetectOffKeepsOnlyTerms) {
  ProtectOptions o;
  o.detect = false;
  o.caller_terms = KeptTerms({"Debian"});
  EXPECT_EQ(Found("Debian: see %s or https://debian.org", o),
            (std::vector<std::string>{"C:Debian"}));
}

TEST(CallerTerms, LongerDetectedSpanWins) {
  ProtectOptions o;
  o.caller_terms = KeptTerms({"example"});
  EXPECT_EQ(Found("Write to example@example.org or example", o),
            (std::vector<std::string>{"E:example@example.org", "C:example"}));
}

// ---- Protect -----------------------------------------------------------------------------------

TEST(Protect, ReplacesSpansByNumberedStandIns) {
  const ProtectedText p = Protect("Send %s to bugs@example.org now.", {});
  EXPECT_EQ(p.model_text, "Send %1 to %2 now.");
  ASSERT_EQ(p.stand_ins.size(), 2u);
  EXPECT_EQ(Slice(p.model_text, p.stand_ins[0]), "%1");
  EXPECT_EQ(Slice(p.model_text, p.stand_ins[1]), "%2");
  EXPECT_EQ(Slice(p.original, p.spans[1].range), "bugs@example.org");
}

TEST(Protect, SkipsNumbersTheTextAlreadyHolds) {
  ProtectOptions o;
  o.detect = false;
  o.caller_terms = KeptTerms({"Debian", "Ubuntu"});
  const ProtectedText p = Protect("%1 Debian %2 Ubuntu", o);
  EXPECT_EQ(p.model_text, "%1 %3 %2 %4");
}

TEST(Protect, NoSpansLeavesTheTextAlone) {
  const ProtectedText p = Protect("Nothing to see here.", {});
  EXPECT_EQ(p.model_text, "Nothing to see here.");
  EXPECT_TRUE(p.spans.empty());
}

// ---- Unprotect ---------------------------------------------------------------------------------

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> pieces;
  size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && s[p] == ' ') ++p;
    const size_t e = std::min(s.find(' ', p), s.size());
    if (e > p) pieces.push_back("\xE2\x96\x81" + s.substr(p, e - p));
    p = e;
  }
  pieces.push_back("</s>");
  return pieces;
}

// Target word t attends to source word to[t] (0.7; the rest small random weights).
AlignedTranslation Translation(const std::string& source, const std::string& target,
                               const std::vector<int>& to, uint32_t seed = 3) {
  AlignedTranslation t;
  t.source = source;
  t.target = target;
  const auto sp = Words(source), tp = Words(target);
  t.source_tokens = PieceRanges(source, sp);
  t.target_tokens = PieceRanges(target, tp);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 0.2f / static_cast<float>(sp.size()));
  for (size_t i = 0; i < tp.size(); ++i) {
    const int want = i < to.size() ? to[i] : static_cast<int>(sp.size()) - 1;
    for (size_t s = 0; s < sp.size(); ++s) {
      t.weights.push_back(static_cast<int>(s) == want ? 0.7f : u(rng));
    }
  }
  return t;
}

TEST(Unprotect, CopiedStandInsGetTheOriginalBytes) {
  const ProtectedText p = Protect("Send bugs to bugs@example.org.", {});
  ASSERT_EQ(p.model_text, "Send bugs to %1.");
  // "Fehler an %1. senden" with %1. aligned to "%1.".
  const AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "Fehler an %1. senden", {1, 2, 3, 0}));
  EXPECT_EQ(t.target, "Fehler an bugs@example.org. senden");
  EXPECT_EQ(t.source, "Send bugs to bugs@example.org.");
  // The token that held the stand-in now covers the span's bytes (and the period).
  EXPECT_EQ(Slice(t.target, t.target_tokens[2]), "bugs@example.org.");
  EXPECT_EQ(Slice(t.source, t.source_tokens[3]), "bugs@example.org.");
  EXPECT_EQ(Slice(t.target, t.target_tokens[3]), "senden");
  EXPECT_EQ(Slice(t.source, t.source_tokens[2]), "to");
}

TEST(Unprotect, KeepsTheDuplicateNearestTheAlignmentAndDeletesTheRest) {
  const ProtectedText p = Protect("Open %s now", {});
  // "%1 jetzt %1 öffnen": the second copy is the one aligned to the source's %1.
  const AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "%1 jetzt %1 öffnen", {2, 2, 1, 0}));
  EXPECT_EQ(t.target, "jetzt %s öffnen");
  EXPECT_EQ(Slice(t.target, t.target_tokens[2]), "%s");
  EXPECT_TRUE(t.target_tokens[0].empty());
  EXPECT_EQ(Slice(t.target, t.target_tokens[1]), "jetzt");
}

TEST(Unprotect, DeletedDuplicateTakesOneSpaceWithIt) {
  const ProtectedText p = Protect("Read README.md first", {});
  const AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "Zuerst %1 lesen %1.", {2, 1, 0, 1}));
  EXPECT_EQ(Count(t.target, "README.md"), 1u);
  EXPECT_EQ(t.target, "Zuerst README.md lesen.");
}

TEST(Unprotect, MissingStandInGoesWhereItsSourceAligns) {
  const ProtectedText p = Protect("Edit /etc/x.conf and restart", {});
  ASSERT_EQ(p.model_text, "Edit %1 and restart");
  // The model dropped %1; "Datei" is aligned to it.
  const AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "Datei bearbeiten und neu starten", {1, 0, 2, 3, 3}));
  EXPECT_EQ(t.target, "/etc/x.conf Datei bearbeiten und neu starten");
  EXPECT_EQ(Slice(t.target, t.target_tokens[0]), "Datei");
}

TEST(Unprotect, AlteredStandInIsReplaced) {
  const ProtectedText p = Protect("Error %d found", {});
  // "% 1" is no copy, but it is what the stand-in's source aligns to.
  const AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "Fehler %-1 gefunden", {0, 1, 2}));
  EXPECT_EQ(t.target, "Fehler %d gefunden");
}

TEST(Unprotect, AlignedWordWithAPercentSignIsNoStandIn) {
  const ProtectedText p = Protect("Error %d at 50% load", {});
  // %1 dropped; its source aligns to "50 %", which is text of the sentence.
  const AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "Fehler bei 50 % Last", {0, 2, 1, 1, 4}));
  EXPECT_EQ(Count(t.target, "%d"), 1u);
  EXPECT_EQ(Count(t.target, "50 % Last"), 1u);
}

TEST(Unprotect, NothingAlignedPutsTheSpanBeforeTheFinalPeriod) {
  const ProtectedText p = Protect("See www.example.org", {});
  AlignedTranslation in = Translation(p.model_text, "Siehe.", {0});
  in.source = "something else";  // not the text Protect made: the alignment is dropped
  const AlignedTranslation t = Unprotect(p, in);
  EXPECT_EQ(t.target, "Siehe www.example.org.");
  EXPECT_TRUE(t.weights.empty());
  EXPECT_EQ(t.source, "See www.example.org");
}

TEST(Unprotect, RoundTripWithoutSpansChangesNothing) {
  const ProtectedText p = Protect("the red house", {});
  const AlignedTranslation in = Translation(p.model_text, "das rote Haus", {0, 1, 2});
  const AlignedTranslation t = Unprotect(p, in);
  EXPECT_EQ(t.target, in.target);
  EXPECT_EQ(t.target_tokens, in.target_tokens);
  EXPECT_EQ(t.source_tokens, in.source_tokens);
}

// ---- Random inputs, random alignments, random model behaviour -------------------------------

const std::vector<std::string> kSpanPool = {"bugs@example.org",
                                            "https://example.com/a_(b)?q=1",
                                            "/etc/transerve/x.conf",
                                            "%-10s",
                                            "{name}",
                                            "${HOME}",
                                            "C:\\Users\\x",
                                            "README.md",
                                            "%(count)d",
                                            "ftp://ftp.gnu.org/gnu/"};
const std::vector<std::string> kWords = {"open", "the", "red", "house", "now", "send",
                                         "file", "to",  "and", "read",  "it",  "first"};

// The property: whatever the model did with the stand-ins, each span comes back exactly once,
// no stand-in survives, the source is the original and every token range is inside its text.
TEST(UnprotectProperty, EverySpanExactlyOnceWhateverTheModelDid) {
  std::mt19937 rng(20261201);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  int dropped = 0, altered = 0, duplicated = 0;
  for (int round = 0; round < 400; ++round) {
    // A sentence of random words with up to 4 distinct spans, never touching each other.
    std::vector<std::string> pool = kSpanPool;
    std::shuffle(pool.begin(), pool.end(), rng);
    const size_t span_count = pick(5);
    std::vector<std::string> source_words, used;
    for (size_t i = 0; i < span_count; ++i) {
      source_words.push_back(kWords[pick(kWords.size())]);
      source_words.push_back(pool[i]);
      used.push_back(pool[i]);
    }
    source_words.push_back(kWords[pick(kWords.size())]);
    std::shuffle(source_words.begin(), source_words.end(), rng);
    std::string text;
    for (size_t i = 0; i < source_words.size(); ++i) {
      // Adjacent spans would merge; a word between keeps them apart.
      const bool both_spans = i > 0 && std::count(used.begin(), used.end(), source_words[i]) > 0 &&
                              std::count(used.begin(), used.end(), source_words[i - 1]) > 0;
      if (i > 0) text += both_spans ? " and " : " ";
      text += source_words[i];
    }
    const ProtectedText p = Protect(text, {});
    ASSERT_EQ(p.spans.size(), used.size()) << text;

    // The model: each source word becomes a target word; stand-ins are copied, dropped,
    // duplicated or altered; words are reordered; alignments partly random.
    const std::vector<std::string> src = Words(p.model_text);
    std::vector<std::string> target_words;
    std::vector<int> to;
    for (size_t s = 0; s + 1 < src.size(); ++s) {
      const std::string w = src[s].substr(3);
      if (w[0] == '%') {
        const double r = std::uniform_real_distribution<double>(0, 1)(rng);
        if (r < 0.2) {
          ++dropped;
          continue;
        }
        altered += r < 0.4;
        duplicated += r >= 0.8;
        const std::string out = r < 0.4 ? "% " + w.substr(1) : w;
        target_words.push_back(out);
        to.push_back(static_cast<int>(s));
        if (r >= 0.8) {  // duplicated
          target_words.push_back(w);
          to.push_back(static_cast<int>(pick(src.size() - 1)));
        }
      } else {
        target_words.push_back(w + "en");
        to.push_back(static_cast<int>(s));
      }
      if (chance(0.3)) to.back() = static_cast<int>(pick(src.size()));
    }
    for (size_t i = 1; i < target_words.size(); ++i) {
      if (chance(0.3)) {
        std::swap(target_words[i], target_words[i - 1]);
        std::swap(to[i], to[i - 1]);
      }
    }
    std::string target;
    for (const std::string& w : target_words) target += (target.empty() ? "" : " ") + w;
    if (chance(0.5)) target += ".";
    // Some alterations split a stand-in into two words: rebuild the alignment per piece.
    const std::vector<std::string> tp = Words(target);
    std::vector<int> piece_to;
    for (size_t i = 0, w = 0; i + 1 < tp.size(); ++i) {
      piece_to.push_back(w < to.size() ? to[w] : 0);
      if (tp[i] != "\xE2\x96\x81%") ++w;
    }
    const AlignedTranslation in = Translation(p.model_text, target, piece_to, round);
    const AlignedTranslation t = Unprotect(p, in);

    SCOPED_TRACE(text + "  ->  " + target + "  ->  " + t.target);
    for (const std::string& span : used) EXPECT_EQ(Count(t.target, span), 1u) << span;
    for (size_t n = 1; n <= used.size(); ++n) {
      const std::string s = StandIn(static_cast<int>(n));
      for (size_t at = t.target.find(s); at != std::string::npos; at = t.target.find(s, at + 1)) {
        EXPECT_TRUE(at + s.size() < t.target.size() && isdigit(t.target[at + s.size()]))
            << "stand-in " << s << " left in the result";
      }
    }
    EXPECT_EQ(t.source, text);
    ASSERT_EQ(t.source_tokens.size(), in.source_tokens.size());
    ASSERT_EQ(t.target_tokens.size(), in.target_tokens.size());
    EXPECT_EQ(t.weights, in.weights);
    for (size_t i = 0; i < t.source_tokens.size(); ++i) {
      const ByteRange r = t.source_tokens[i];
      EXPECT_LE(r.begin, r.end);
      EXPECT_LE(r.end, t.source.size());
      // A stand-in's token covers its span; any other token keeps its text.
      const std::string before = Slice(in.source, in.source_tokens[i]);
      if (before.size() > 1 && before[0] == '%') {
        EXPECT_EQ(std::count(used.begin(), used.end(), Slice(t.source, r)), 1) << before;
      } else {
        EXPECT_EQ(Slice(t.source, r), before);
      }
    }
    size_t last_end = 0;
    for (const ByteRange& r : t.target_tokens) {
      EXPECT_LE(r.begin, r.end);
      EXPECT_LE(r.end, t.target.size());
      EXPECT_GE(r.begin, std::min(last_end, r.begin));
      last_end = std::max(last_end, r.end);
    }
  }
  // Every kind of model behaviour came up many times.
  EXPECT_GT(dropped, 50);
  EXPECT_GT(altered, 50);
  EXPECT_GT(duplicated, 50);
}

// Every stand-in copied once: the target tokens that held stand-ins now hold exactly the spans.
TEST(UnprotectProperty, CopiedStandInTokensCoverTheirSpans) {
  std::mt19937 rng(77);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::string> pool = kSpanPool;
    std::shuffle(pool.begin(), pool.end(), rng);
    std::string text = "please";
    for (size_t i = 0; i < 3; ++i) text += " " + kWords[rng() % kWords.size()] + " " + pool[i];
    const ProtectedText p = Protect(text, {});
    ASSERT_EQ(p.spans.size(), 3u) << text;
    // Reversed word order, alignment exact.
    std::vector<std::string> words;
    std::string w;
    for (char c : p.model_text + " ") {
      if (c != ' ') {
        w += c;
      } else if (!w.empty()) {
        words.push_back(w);
        w.clear();
      }
    }
    std::string target;
    std::vector<int> to;
    for (size_t i = words.size(); i-- > 0;) {
      target += (target.empty() ? "" : " ") + words[i];
      to.push_back(static_cast<int>(i));
    }
    const AlignedTranslation in = Translation(p.model_text, target, to, round);
    const AlignedTranslation t = Unprotect(p, in);
    for (size_t i = 0; i < in.target_tokens.size(); ++i) {
      const std::string before = Slice(in.target, in.target_tokens[i]);
      if (before.empty() || before[0] != '%') continue;
      const size_t n = std::stoul(before.substr(1));
      EXPECT_EQ(Slice(t.target, t.target_tokens[i]), Slice(text, p.spans[n - 1].range));
    }
  }
}

// ---- Glossary terms -----------------------------------------------------------------------------

std::vector<std::shared_ptr<const TermTable>> Glossary(const std::vector<Term>& terms) {
  return {std::make_shared<TermTable>(terms, TermCase::kSentenceAndCapitals)};
}

TEST(GlossaryTerms, FoundWithTheirTargetsAndNeverMerged) {
  ProtectOptions o;
  o.glossaries = Glossary({{"cloud", "Wolke"}, {"server", "Server"}});
  const auto spans = FindProtectedSpans("Cloud server, cloud-server and clouds", o);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].target, "Wolke");  // "Cloud": capitalised, as the German was already
  EXPECT_EQ(spans[1].target, "Server");
  EXPECT_EQ(spans[2].target, "Wolke");  // "cloud" and "server" around a hyphen: two spans
  EXPECT_EQ(spans[3].target, "Server");
  EXPECT_EQ(spans[2].range.end + 1, spans[3].range.begin);
  EXPECT_EQ(Found("Cloud server, cloud-server and clouds", o),
            (std::vector<std::string>{"G:Cloud", "G:server", "G:cloud", "G:server"}));
}

TEST(GlossaryTerms, CallerTermWinsATieAndALongerDetectedSpanWinsOverBoth) {
  ProtectOptions o;
  o.caller_terms = KeptTerms({"Debian"});
  o.glossaries = Glossary({{"Debian", "Debian GNU/Linux"}, {"example", "Beispiel"}});
  EXPECT_EQ(Found("Debian at www.example.org or example", o),
            (std::vector<std::string>{"C:Debian", "U:www.example.org", "G:example"}));
}

TEST(GlossaryTerms, TouchingSpansKeepTheirOwnTargets) {
  ProtectOptions o;
  o.glossaries = Glossary({{"cloud", "Wolke"}});
  // "{0}cloud": a placeholder, then a glossary term glued to it: two spans, two stand-ins (the
  // term's is its target), and a term glued to a digit keeps its stand-in too.
  const ProtectedText p = Protect("Use {0}cloud now, cloud9", o);
  ASSERT_EQ(p.spans.size(), 2u);
  EXPECT_EQ(p.spans[0].kind, SpanKind::kFormatSpecifier);
  EXPECT_EQ(p.spans[0].target, "");  // (not a glossary term: its own bytes go back)
  EXPECT_EQ(p.spans[1].target, "Wolke");
  EXPECT_EQ(p.model_text, "Use %1Wolke now, cloud9");  // ("cloud9" is one word: no term)
  ProtectOptions plus;
  plus.glossaries = Glossary({{"C++", "C++ (Sprache)"}});
  EXPECT_EQ(Protect("C++17", plus).model_text, "C++ (Sprache)17");
}

TEST(GlossaryTerms, TheTranslationHoldsTheTargetTermWhereverTheModelPutTheStandIn) {
  ProtectOptions o;
  o.glossaries = Glossary({{"hard disk", "Festplatte"}, {"backup", "Sicherung"}});
  const ProtectedText p = Protect("Copy the backup to the hard disk.", o);
  ASSERT_EQ(p.model_text, "Copy the Sicherung to the Festplatte.");
  // Copied, in another order, one inside a compound the model made: left as written.
  AlignedTranslation t =
      Unprotect(p, Translation(p.model_text, "Kopieren Sie auf Festplatte. die Sicherungsdatei",
                               {0, 0, 5, 5, 1, 2}));
  EXPECT_EQ(t.target, "Kopieren Sie auf Festplatte. die Sicherungsdatei");
  EXPECT_EQ(t.source, "Copy the backup to the hard disk.");
  EXPECT_EQ(Slice(t.source, t.source_tokens[2]), "backup");
  EXPECT_EQ(Slice(t.source, t.source_tokens[5]), "hard disk.");
  // A stand-in the model dropped: the target term still comes out, once.
  t = Unprotect(p,
                Translation(p.model_text, "Kopieren Sie die Sicherung dorthin.", {0, 0, 1, 2, 5}));
  EXPECT_EQ(Count(t.target, "Festplatte"), 1u) << t.target;
  EXPECT_EQ(Count(t.target, "Sicherung"), 1u) << t.target;
  // Two occurrences of one term need two copies.
  const ProtectedText twice = Protect("a backup of the backup", o);
  ASSERT_EQ(twice.model_text, "a Sicherung of the Sicherung");
  t = Unprotect(twice, Translation(twice.model_text, "eine Sicherung davon", {0, 1, 3}));
  EXPECT_EQ(Count(t.target, "Sicherung"), 2u) << t.target;
}

TEST(GlossaryTerms, TheLongestMatchOfAnyTableWinsAndTheFirstTableATie) {
  ProtectOptions o;
  o.glossaries = Glossary({{"disk", "Platte"}});
  o.glossaries.push_back(nullptr);
  o.glossaries.push_back(
      std::make_shared<TermTable>(std::vector<Term>{{"disk", "Disk"}, {"hard disk", "Festplatte"}},
                                  TermCase::kSentenceAndCapitals));
  const auto spans = FindProtectedSpans("a disk, a hard disk", o);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].target, "Platte");
  EXPECT_EQ(spans[1].target, "Festplatte");
}

}  // namespace
}  // namespace transerve::text
