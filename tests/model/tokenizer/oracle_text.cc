// Text generators for the oracle test. Each line picks a style (prose, mixed scripts, whitespace
// torture, long words, random code points, ...) and draws from pools of characters chosen for
// what they do in SentencePiece's normalizers (NFKC folding, case folding, deletions, spaces).
#include "tests/model/tokenizer/oracle_text.h"

#include <array>
#include <string_view>

namespace transerve::testing {
namespace {

using Pool = std::vector<std::string_view>;

const Pool& EnglishWords() {
  static const Pool kWords = {"the",         "of",
                              "and",         "to",
                              "in",          "is",
                              "that",        "for",
                              "it",          "as",
                              "was",         "with",
                              "be",          "by",
                              "on",          "not",
                              "he",          "this",
                              "are",         "or",
                              "his",         "from",
                              "at",          "which",
                              "but",         "have",
                              "an",          "had",
                              "they",        "you",
                              "were",        "their",
                              "one",         "all",
                              "we",          "can",
                              "her",         "has",
                              "there",       "been",
                              "if",          "more",
                              "when",        "will",
                              "would",       "who",
                              "so",          "no",
                              "translation", "model",
                              "server",      "request",
                              "latency",     "throughput",
                              "sentence",    "token",
                              "vocabulary",  "decoder",
                              "encoder",     "attention",
                              "German",      "English",
                              "Parliament",  "committee",
                              "government",  "economic",
                              "development", "international",
                              "cooperation", "September",
                              "Monday",      "quickly",
                              "brown",       "fox",
                              "jumps",       "over",
                              "lazy",        "dog",
                              "hello",       "world",
                              "don't",       "it's",
                              "we're",       "O'Neill",
                              "e-mail",      "state-of-the-art",
                              "U.S.",        "Dr.",
                              "etc.",        "i.e.",
                              "API",         "GPU",
                              "CPU",         "HTTP/2",
                              "gRPC",        "JSON",
                              "C++20",       "x86_64",
                              "naïve",       "café",
                              "résumé",      "coöperate",
                              "Zürich",      "São",
                              "Paulo",       "Ångström",
                              "fiancée",     "Straße",
                              "İstanbul",    "ǅemal",
                              "ﬁnancial",    "oﬀice",
                              "Ⅻ",           "№",
                              "℃",           "㎏",
                              "™",           "Ⓐ",
                              "ＡＢＣ",      "ｓｅｒｖｅｒ",
                              "ｶﾀｶﾅ",        "ﾊﾟﾝ"};
  return kWords;
}

const Pool& ForeignPhrases() {
  static const Pool kPhrases = {"Ελληνικά κείμενα",
                                "ΣΟΦΟΣ σοφός",
                                "Москва — столица России",
                                "Привет, мир!",
                                "Übersetzung größer ÄÖÜ äöü ß ẞ",
                                "Ça va? Très bien, merci.",
                                "¿Qué tal? ¡Muy bien!",
                                "Dziękuję bardzo",
                                "Čeština žluťoučký kůň",
                                "Tiếng Việt có dấu: Nguyễn Thị Hằng",
                                "مرحبا بالعالم",
                                "שלום עולם",
                                "नमस्ते दुनिया",
                                "สวัสดีชาวโลก",
                                "გამარჯობა",
                                "Բարեւ",
                                "வணக்கம்",
                                "ሰላም",
                                "日本語のテキストです。",
                                "東京都渋谷区",
                                "ひらがなとカタカナ",
                                "中文文本测试，标点符号。",
                                "繁體中文測試",
                                "한국어 텍스트입니다",
                                "안녕하세요",
                                "Ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ　１２３",
                                "ﾃｽﾄﾃﾞｰﾀ",
                                "㈱㈲",
                                "①②③",
                                "ｘ²＋ｙ²＝ｚ²",
                                "Ⅰ Ⅱ Ⅲ Ⅳ",
                                "ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ",
                                "ℌ ℍ ℕ ℙ",
                                "𝐁𝐨𝐥𝐝 𝑰𝒕𝒂𝒍𝒊𝒄",
                                "Ｈｅｌｌｏ！？"};
  return kPhrases;
}

const Pool& Punctuation() {
  static const Pool kPunct = {
      ".",  ",",  ";",     ":",   "!",    "?",     "\"",    "'",      "(",  ")",      "[",  "]",
      "{",  "}",  "-",     "--",  "...",  "/",     "\\",    "&",      "%",  "$",      "#",  "@",
      "*",  "+",  "=",     "<",   ">",    "|",     "~",     "^",      "`",  "_",      "“",  "”",
      "‘",  "’",  "—",     "–",   "…",    "«",     "»",     "‹",      "›",  "„",      "‚",  "¡",
      "¿",  "•",  "·",     "§",   "¶",    "†",     "‡",     "‰",      "′",  "″",      "‼",  "⁇",
      "※",  "。", "、",    "「",  "」",   "『",    "』",    "【",     "】", "・",     "〜", "！",
      "？", "（", "）",    "，",  "．",   "：",    "；",    "＂",     "＇", "€",      "£",  "¥",
      "¢",  "₹",  "°",     "±",   "×",    "÷",     "≠",     "≤",      "≥",  "→",      "←",  "⇒",
      "√",  "∞",  "<unk>", "<s>", "</s>", "<pad>", "<sep>", "[MASK]", "@@", ">>fra<<"};
  return kPunct;
}

const Pool& CombiningSequences() {
  static const Pool kSeq = {"e\u0301",
                            "a\u0308",
                            "n\u0303",
                            "o\u0302\u0323",
                            "A\u030A",
                            "u\u0308\u0301",
                            "i\u0307",
                            "\u0301",
                            "\u0308x",
                            "c\u0327",
                            "z\u030C",
                            "\u1100\u1161\u11A8",
                            "\u1112\u1161\u11AB",
                            "\u0915\u094D\u0937",
                            "\u0e01\u0e34\u0e48",
                            "\u05e9\u05c1",
                            "\u0627\u0651",
                            "Ω\u0301",
                            "ς",
                            "Σ",
                            "ﬃ",
                            "K\u0301",
                            "\u212B",
                            "\u2126",
                            "\u00C5"};
  return kSeq;
}

const Pool& Emoji() {
  static const Pool kEmoji = {"😀",
                              "😂",
                              "🥲",
                              "👍",
                              "👍🏽",
                              "👩‍💻",
                              "👨‍👩‍👧‍👦",
                              "🏳️‍🌈",
                              "🇩🇪",
                              "🇯🇵",
                              "❤️",
                              "❤",
                              "☺️",
                              "1️⃣",
                              "#️⃣",
                              "🤖",
                              "🚀",
                              "🔥",
                              "✨",
                              "🧑🏿‍🚀",
                              "🫠",
                              "🀄",
                              "🂡",
                              "🄰",
                              "🅰️"};
  return kEmoji;
}

const Pool& OddSpaces() {
  static const Pool kSpaces = {" ",      "  ",     "   ",    "\t",     " \t ",         "\u00A0",
                               "\u2002", "\u2003", "\u2009", "\u200A", "\u202F",       "\u205F",
                               "\u3000", "\u200B", "\u2028", "\u2029", "\u1680",       "\u0085",
                               "\u000B", "\u000C", "\r",     "\u2581", "\u2581\u2581", " \u2581 "};
  return kSpaces;
}

// Characters that normalizers delete or rewrite: C0/C1 controls, format characters, BOM,
// noncharacters, U+FFFD.
const Pool& ControlChars() {
  static const Pool kCtrl = {std::string_view("\x00", 1),
                             "\x01",
                             "\x02",
                             "\x07",
                             "\x08",
                             "\x0E",
                             "\x1B",
                             "\x1F",
                             "\x7F",
                             "\u0080",
                             "\u008D",
                             "\u009F",
                             "\uFEFF",
                             "\u00AD",
                             "\u200C",
                             "\u200D",
                             "\u200E",
                             "\u200F",
                             "\u202A",
                             "\u202E",
                             "\u2060",
                             "\u2066",
                             "\uFFF9",
                             "\uFFFC",
                             "\uFFFD",
                             "\uFE0F",
                             "\uFE00",
                             "\U000E0001",
                             "\U000E0041",
                             "\U000F0000",
                             "\U0010FFFD"};
  return kCtrl;
}

const Pool& Digits() {
  static const Pool kDigits = {"0",
                               "7",
                               "42",
                               "1999",
                               "2024",
                               "3.14159",
                               "1,234,567.89",
                               "10%",
                               "-5",
                               "+49",
                               "1e-9",
                               "0x1F",
                               "½",
                               "¾",
                               "²",
                               "³",
                               "٣٤٥",
                               "۱۲۳",
                               "१२३",
                               "๑๒๓",
                               "１２３",
                               "⑳",
                               "12:30",
                               "24/7",
                               "v1.2.3",
                               "+1 (555) 010-9999"};
  return kDigits;
}

// Malformed UTF-8: stray continuation bytes, truncated sequences, overlong forms, surrogates,
// code points past U+10FFFF, bytes that never occur in UTF-8.
const Pool& MalformedBytes() {
  static const Pool kBad = {"\x80",
                            "\xBF",
                            "\xC0\xAF",
                            "\xC1\xBF",
                            "\xE0\x80\xAF",
                            "\xE2\x82",
                            "\xE2",
                            "\xF0\x9F",
                            "\xF0\x9F\x98",
                            "\xED\xA0\x80",
                            "\xED\xBF\xBF",
                            "\xF4\x90\x80\x80",
                            "\xF5\x80\x80\x80",
                            "\xF8\x88\x80\x80\x80",
                            "\xFE",
                            "\xFF",
                            "\xC3",
                            "\xC3\x28",
                            "\xE2\x28\xA1",
                            "\xA0\xA1"};
  return kBad;
}

std::string_view Pick(const Pool& pool, SplitMix64& rng) { return pool[rng.Below(pool.size())]; }

// A code point from a range that exercises the normalizer's tables: any plane, but mostly BMP.
uint32_t RandomCodePoint(SplitMix64& rng) {
  static constexpr std::array<std::pair<uint32_t, uint32_t>, 14> kRanges = {{
      {0x00A0, 0x024F},  // Latin-1 supplement, Latin extended
      {0x0300, 0x036F},  // combining diacritics
      {0x0370, 0x052F},  // Greek, Cyrillic
      {0x0590, 0x06FF},  // Hebrew, Arabic
      {0x0900, 0x0DFF},  // Indic scripts
      {0x0E00, 0x0FFF},  // Thai, Lao, Tibetan
      {0x1100, 0x11FF},  // Hangul jamo
      {0x1E00, 0x1FFF},  // Latin extended additional, Greek extended
      {0x2000, 0x2BFF},  // punctuation, symbols, letterlike, number forms, arrows, math
      {0x2E80, 0x33FF},  // CJK radicals, kana, CJK compatibility
      {0x4E00, 0x4FFF},  // CJK ideographs (a slice)
      {0xAC00, 0xACFF},  // Hangul syllables (a slice)
      {0xF900, 0xFFFF},  // compatibility ideographs, presentation forms, half/full width
      {0x10000, 0x10FFFF},
  }};
  const auto& [lo, hi] = kRanges[rng.Below(kRanges.size())];
  for (;;) {
    const uint32_t cp = lo + rng.Below(hi - lo + 1);
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates are not characters
    return cp;
  }
}

std::string RandomLetters(SplitMix64& rng, int len) {
  std::string s;
  const uint32_t alphabet = 2 + rng.Below(25);  // small alphabets make repetitive words
  for (int i = 0; i < len; ++i) s.push_back(static_cast<char>('a' + rng.Below(alphabet)));
  return s;
}

std::string ProseSentence(SplitMix64& rng) {
  std::string s;
  const int words = 3 + rng.Below(20);
  for (int i = 0; i < words; ++i) {
    if (i > 0) s += rng.Chance(90) ? " " : std::string(Pick(OddSpaces(), rng));
    std::string word(Pick(EnglishWords(), rng));
    if (i == 0 && !word.empty() && word[0] >= 'a' && word[0] <= 'z') word[0] -= 32;
    if (rng.Chance(5)) {
      for (char& c : word) {
        if (c >= 'a' && c <= 'z') c -= 32;
      }
    }
    s += word;
    if (rng.Chance(12)) s += Pick(Punctuation(), rng);
    if (rng.Chance(6)) {
      s += ' ';
      s += Pick(Digits(), rng);
    }
  }
  s += Pick(Punctuation(), rng);
  return s;
}

std::string MixedLine(SplitMix64& rng, bool random_code_points) {
  std::string s;
  const int parts = 2 + rng.Below(14);
  for (int i = 0; i < parts; ++i) {
    switch (rng.Below(9)) {
      case 0:
        s += Pick(EnglishWords(), rng);
        break;
      case 1:
        s += Pick(ForeignPhrases(), rng);
        break;
      case 2:
        s += Pick(Punctuation(), rng);
        break;
      case 3:
        s += Pick(CombiningSequences(), rng);
        break;
      case 4:
        s += Pick(Emoji(), rng);
        break;
      case 5:
        s += Pick(Digits(), rng);
        break;
      case 6:
        s += Pick(OddSpaces(), rng);
        break;
      case 7:
        if (random_code_points) AppendCodePoint(RandomCodePoint(rng), &s);
        break;
      default:
        s += RandomLetters(rng, 1 + rng.Below(8));
        break;
    }
    if (rng.Chance(60)) s += " ";
  }
  return s;
}

std::string WhitespaceLine(SplitMix64& rng) {
  std::string s;
  const int parts = 1 + rng.Below(8);
  for (int i = 0; i < parts; ++i) {
    const int spaces = rng.Below(5);
    for (int k = 0; k < spaces; ++k) s += Pick(OddSpaces(), rng);
    if (rng.Chance(80)) s += Pick(EnglishWords(), rng);
  }
  const int trailing = rng.Below(5);
  for (int k = 0; k < trailing; ++k)
    s += rng.Chance(50) ? " " : std::string(Pick(OddSpaces(), rng));
  return s;
}

std::string LongWordLine(SplitMix64& rng, bool random_code_points) {
  std::string s;
  switch (rng.Below(random_code_points ? 6 : 5)) {
    case 0:
      s = RandomLetters(rng, 30 + rng.Below(300));
      break;
    case 1: {
      const std::string syllable(Pick(EnglishWords(), rng));
      const int n = 5 + rng.Below(60);
      for (int i = 0; i < n; ++i) s += syllable;
      break;
    }
    case 2:
      s = std::string(20 + rng.Below(200), 'a' + rng.Below(26));
      break;
    case 3:
      for (int i = 0, n = 20 + rng.Below(200); i < n; ++i) s.push_back('0' + rng.Below(10));
      break;
    case 4: {
      const std::string_view phrase = Pick(ForeignPhrases(), rng);
      for (int i = 0, n = 3 + rng.Below(30); i < n; ++i) s += phrase;
      break;
    }
    default:
      for (int i = 0, n = 20 + rng.Below(100); i < n; ++i)
        AppendCodePoint(RandomCodePoint(rng), &s);
      break;
  }
  if (rng.Chance(50)) s = std::string(Pick(EnglishWords(), rng)) + " " + s;
  if (rng.Chance(50)) {
    s += ' ';
    s += Pick(EnglishWords(), rng);
  }
  return s;
}

std::string RandomCodePointLine(SplitMix64& rng) {
  std::string s;
  for (int i = 0, n = 1 + rng.Below(40); i < n; ++i) {
    AppendCodePoint(RandomCodePoint(rng), &s);
    if (rng.Chance(25)) s += ' ';
  }
  return s;
}

// Sprinkles characters from `pool` into `line` at character boundaries (never inside a UTF-8
// sequence, so that well-formed lines stay well-formed unless the pool is malformed bytes).
void Sprinkle(const Pool& pool, int count, SplitMix64& rng, std::string* line) {
  for (int i = 0; i < count; ++i) {
    size_t pos = line->empty() ? 0 : rng.Below(line->size() + 1);
    while (pos < line->size() && (static_cast<unsigned char>((*line)[pos]) & 0xC0) == 0x80) ++pos;
    line->insert(pos, Pick(pool, rng));
  }
}

// The training corpus (`for_training`) has no random code points, which would make the
// required alphabet larger than the vocabulary, and no malformed bytes.
std::string Line(SplitMix64& rng, bool for_training) {
  std::string s;
  const uint32_t style = rng.Below(100);
  if (style < 30) {
    s = ProseSentence(rng);
  } else if (style < 55) {
    s = MixedLine(rng, !for_training);
  } else if (style < 65) {
    s = WhitespaceLine(rng);
  } else if (style < 72) {
    s = LongWordLine(rng, !for_training);
  } else if (style < 80) {
    s = for_training ? ProseSentence(rng) : RandomCodePointLine(rng);
  } else if (style < 90) {
    s = std::string(Pick(ForeignPhrases(), rng));
    if (rng.Chance(50)) s += Pick(Punctuation(), rng);
    if (rng.Chance(50)) s += std::string(Pick(ForeignPhrases(), rng));
  } else if (style < 92) {
    // Empty and whitespace-only lines.
    for (int i = 0, n = rng.Below(4); i < n; ++i) s += Pick(OddSpaces(), rng);
  } else {
    s = ProseSentence(rng);
    Sprinkle(Emoji(), 1 + rng.Below(3), rng, &s);
  }
  if (rng.Chance(10)) Sprinkle(ControlChars(), 1 + rng.Below(3), rng, &s);
  if (rng.Chance(8)) Sprinkle(CombiningSequences(), 1 + rng.Below(3), rng, &s);
  if (rng.Chance(15)) s = std::string(Pick(OddSpaces(), rng)) + s;
  if (rng.Chance(15)) s += Pick(OddSpaces(), rng);
  if (!for_training && rng.Chance(4)) Sprinkle(MalformedBytes(), 1 + rng.Below(3), rng, &s);
  // The spm tools read lines with std::getline: a newline would split the line in two.
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

}  // namespace

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void AppendCodePoint(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::vector<std::string> GenerateOracleLines(uint64_t seed, int count) {
  SplitMix64 rng(seed);
  std::vector<std::string> lines;
  lines.reserve(count);
  for (int i = 0; i < count; ++i) lines.push_back(Line(rng, /*for_training=*/false));
  return lines;
}

std::vector<std::string> GenerateTrainingCorpus(uint64_t seed, int count) {
  SplitMix64 rng(seed);
  std::vector<std::string> lines;
  lines.reserve(count);
  for (int i = 0; i < count; ++i) {
    // Mostly prose and phrases so the vocabulary has real multi-character pieces.
    std::string s = rng.Chance(60) ? ProseSentence(rng) : Line(rng, /*for_training=*/true);
    for (char& c : s) {
      if (c == '\n' || c == '\0') c = ' ';
    }
    lines.push_back(std::move(s));
  }
  return lines;
}

}  // namespace transerve::testing
