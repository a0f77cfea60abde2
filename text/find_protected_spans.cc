// FindProtectedSpans: a hand-written scanner (one pass, each matcher tried at each position).
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <string>

#include "text/protected_spans.h"
#include "text/utf8_chars.h"

namespace transerve::text {
namespace {

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiAlnum(char c) { return IsAsciiDigit(c) || IsAsciiAlpha(c); }
bool In(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool StartsWithNoCase(std::string_view text, size_t pos, std::string_view prefix) {
  if (text.size() - pos < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (Lower(text[pos + i]) != prefix[i]) return false;
  }
  return true;
}

// True when `pos` starts a token that a URL, path or file name may begin: not glued to a word
// or to characters that would make it the middle of something else ("and/or", "a.b/c").
// `<` and `>` may come before a URL ("<https://x.org/>"), not before a path ("</b>").
bool AtTokenStart(std::string_view text, size_t pos, bool after_angle_ok = false) {
  const UChar32 c = CharBefore(text, pos);
  if (c < 0) return true;
  if (IsTermChar(c)) return false;
  if (c > 0x7F) return true;
  if (In(static_cast<char>(c), "<>")) return after_angle_ok;
  return !In(static_cast<char>(c), "/.\\~-@%$&*+#");
}

// ---- format specifiers ----------------------------------------------------------------------

size_t SkipDigits(std::string_view t, size_t i) {
  while (i < t.size() && IsAsciiDigit(t[i])) ++i;
  return i;
}

size_t SkipLengthModifier(std::string_view t, size_t i) {
  for (std::string_view m : {"hh", "ll", "I64", "I32", "h", "l", "L", "q", "j", "z", "t"}) {
    if (t.substr(i, m.size()) == m) return i + m.size();
  }
  return i;
}

// `%...` at pos: printf (flags, width, precision, length, conversion; `%N$` positions), `%%`,
// Python `%(name)s`, ObjC `%@`, Qt `%1`/`%L1`. Returns the length, 0 when none.
size_t MatchPercent(std::string_view t, size_t pos) {
  if (t[pos] != '%' || pos + 1 >= t.size()) return 0;
  const size_t n = t.size();
  size_t i = pos + 1;
  if (t[i] == '%' || t[i] == '@') return 2;
  if (t[i] == '(') {
    size_t j = i + 1;
    while (j < n && (IsAsciiAlnum(t[j]) || t[j] == '_')) ++j;
    if (j == i + 1 || j >= n || t[j] != ')') return 0;
    ++j;
    while (j < n && In(t[j], "-+#0")) ++j;
    j = SkipDigits(t, j);
    if (j + 1 < n && t[j] == '.' && IsAsciiDigit(t[j + 1])) j = SkipDigits(t, j + 1);
    return j < n && In(t[j], "diouxXeEfFgGcrsa") ? j + 1 - pos : 0;
  }
  // Qt: %1 .. %99, %L1.
  size_t qt = 0;
  {
    size_t j = i;
    if (j < n && t[j] == 'L') ++j;
    if (j < n && t[j] >= '1' && t[j] <= '9') {
      const size_t e = SkipDigits(t, j);
      if (e - j <= 2) qt = e - pos;
    }
  }
  size_t j = i;
  bool plain = true;  // nothing between '%' and the conversion
  const size_t digits_end = SkipDigits(t, j);
  if (digits_end > j && digits_end < n && t[digits_end] == '$') {
    j = digits_end + 1;
    plain = false;
  }
  const size_t flags_begin = j;
  while (j < n && In(t[j], "-+#0'")) ++j;
  if (j < n && t[j] == '*') {
    ++j;
  } else {
    j = SkipDigits(t, j);
  }
  if (j + 1 < n && t[j] == '.' && (IsAsciiDigit(t[j + 1]) || t[j + 1] == '*')) {
    j = t[j + 1] == '*' ? j + 2 : SkipDigits(t, j + 1);
  }
  j = SkipLengthModifier(t, j);
  if (j != flags_begin) plain = false;
  size_t printf_len = 0;
  if (j < n && In(t[j], "diouxXeEfFgGaAcCsSpnm@")) {
    printf_len = j + 1 - pos;
    // "50%off", "100%sure": a bare conversion letter after a number and before more letters is
    // a percent sign in prose.
    if (plain && IsAsciiAlpha(t[j]) && j + 1 < n && IsAsciiAlpha(t[j + 1]) && pos > 0 &&
        IsAsciiDigit(t[pos - 1])) {
      printf_len = 0;
    }
  }
  return std::max(printf_len, qt);
}

// `{...}` at pos: `{{ var }}` templates, the escapes `{{` `}}`, and `{0}`, `{name}`, `{}`,
// `{0:N2}`, `{0,-10}`, `{x!r}`, `{user.name}`, `{0[1]}`.
size_t MatchBrace(std::string_view t, size_t pos) {
  const size_t n = t.size();
  if (t[pos] == '}') return pos + 1 < n && t[pos + 1] == '}' ? 2 : 0;
  if (t[pos] != '{') return 0;
  if (pos + 1 < n && t[pos + 1] == '{') {
    constexpr size_t kMaxTemplate = 80;
    for (size_t j = pos + 2; j + 1 < n && j - pos < kMaxTemplate; ++j) {
      if (t[j] == '\n' || t[j] == '{') break;
      if (t[j] == '}') {
        if (t[j + 1] == '}' && j > pos + 2) return j + 2 - pos;
        break;
      }
    }
    return 2;
  }
  size_t j = pos + 1;
  constexpr size_t kMaxField = 40, kMaxFormat = 30;
  while (j < n && j - pos <= kMaxField && (IsAsciiAlnum(t[j]) || In(t[j], "_.[]"))) ++j;
  if (j + 1 < n && t[j] == '!' && In(t[j + 1], "rsa")) j += 2;
  if (j + 1 < n && t[j] == ',') {
    size_t k = j + 1;
    if (k < n && t[k] == '-') ++k;
    const size_t e = SkipDigits(t, k);
    if (e > k) j = e;
  }
  if (j < n && t[j] == ':') {
    const size_t start = j;
    ++j;
    while (j < n && j - start <= kMaxFormat && !In(t[j], "{}\n")) ++j;
  }
  return j < n && t[j] == '}' ? j + 1 - pos : 0;
}

// `$...` at pos: `${var}`, `$(cmd)`, `$VAR`, `$1`. "$10" and "$5.00" are money, not variables.
size_t MatchDollar(std::string_view t, size_t pos) {
  const size_t n = t.size();
  if (t[pos] != '$' || pos + 1 >= n) return 0;
  const char c = t[pos + 1];
  if (c == '{' || c == '(') {
    const char close = c == '{' ? '}' : ')';
    constexpr size_t kMax = 80;
    int depth = 0;
    for (size_t j = pos + 1; j < n && j - pos < kMax; ++j) {
      if (t[j] == '\n') return 0;
      if (c == '{' && (t[j] == ' ' || t[j] == '\t')) return 0;
      if (t[j] == c) ++depth;
      if (t[j] == close && --depth == 0) return j > pos + 2 ? j + 1 - pos : 0;
    }
    return 0;
  }
  if (IsAsciiAlpha(c) || c == '_') {
    size_t j = pos + 1;
    while (j < n && (IsAsciiAlnum(t[j]) || t[j] == '_')) ++j;
    return j - pos;
  }
  if (IsAsciiDigit(c)) {
    if (pos + 2 < n && (IsAsciiDigit(t[pos + 2]) ||
                        (In(t[pos + 2], ".,") && pos + 3 < n && IsAsciiDigit(t[pos + 3])))) {
      return 0;
    }
    return 2;
  }
  return 0;
}

// ---- URLs, e-mail addresses, paths ----------------------------------------------------------

// Bytes a URL or path may hold: no whitespace, no quotes or angle brackets, and beyond ASCII
// only letters, digits and marks (so "»", "“" or a non-breaking space end it).
size_t UrlCharLength(std::string_view t, size_t pos, std::string_view ascii_stops) {
  const unsigned char b = static_cast<unsigned char>(t[pos]);
  if (b < 0x80) {
    if (b <= 0x20 || b == 0x7F || In(static_cast<char>(b), ascii_stops)) return 0;
    return 1;
  }
  size_t len = 0;
  const UChar32 c = CharAt(t, pos, &len);
  return IsTermChar(c) ? len : 0;
}

// Drops trailing sentence punctuation and closing brackets the span did not open.
size_t TrimTrailing(std::string_view t, size_t begin, size_t end) {
  while (end > begin) {
    const char c = t[end - 1];
    if (In(c, ".,;:!?'")) {
      --end;
      continue;
    }
    const char open = c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : 0;
    if (open == 0) break;
    const std::string_view s = t.substr(begin, end - begin);
    if (std::count(s.begin(), s.end(), open) >= std::count(s.begin(), s.end(), c)) break;
    --end;
  }
  return end;
}

size_t MatchEmailAt(std::string_view t, size_t pos);

size_t MatchUrl(std::string_view t, size_t pos) {
  if (!AtTokenStart(t, pos, /*after_angle_ok=*/true)) return 0;
  size_t start = 0;
  bool www = false;
  for (std::string_view scheme : {"https://", "http://", "ftp://", "file://", "mailto:", "www."}) {
    if (StartsWithNoCase(t, pos, scheme)) {
      start = pos + scheme.size();
      www = scheme == "www.";
      if (scheme == "mailto:") {
        const size_t e = start < t.size() ? MatchEmailAt(t, start) : 0;
        return e == 0 ? 0 : start + e - pos;
      }
      break;
    }
  }
  if (start == 0 || start >= t.size()) return 0;
  size_t end = start;
  while (end < t.size()) {
    const size_t len = UrlCharLength(t, end, "<>\"`");
    if (len == 0) break;
    end += len;
  }
  end = TrimTrailing(t, start, end);
  if (end == start) return 0;
  // "www." needs a host with a dot: "www.example.org", not "www.".
  if (www) {
    const std::string_view host = t.substr(start, end - start);
    const size_t dot = host.find('.');
    if (dot == 0 || dot == std::string_view::npos || dot + 1 >= host.size()) return 0;
  }
  return end - pos;
}

bool IsLocalPartChar(char c) { return IsAsciiAlnum(c) || In(c, "._+-"); }

// An address starting exactly at pos: local@label.label[.label...], a letter-only last label.
size_t MatchEmailAt(std::string_view t, size_t pos) {
  const size_t n = t.size();
  size_t j = pos;
  while (j < n && IsLocalPartChar(t[j]) && j - pos < 64) ++j;
  if (j == pos || j >= n || t[j] != '@' || t[pos] == '.' || t[j - 1] == '.') return 0;
  size_t k = j + 1;
  int labels = 0;
  size_t last_label_begin = k;
  while (k < n && IsAsciiAlnum(t[k])) {
    last_label_begin = k;
    while (k < n && (IsAsciiAlnum(t[k]) || t[k] == '-')) ++k;
    ++labels;
    if (k + 1 < n && t[k] == '.' && IsAsciiAlnum(t[k + 1])) {
      ++k;
      continue;
    }
    break;
  }
  if (labels < 2) return 0;
  while (k > last_label_begin && t[k - 1] == '-') --k;
  if (k - last_label_begin < 2) return 0;
  for (size_t q = last_label_begin; q < k; ++q) {
    if (!IsAsciiAlpha(t[q])) return 0;
  }
  return k - pos;
}

size_t MatchEmail(std::string_view t, size_t pos) {
  if (!IsLocalPartChar(t[pos])) return 0;
  if (pos > 0 && (IsLocalPartChar(t[pos - 1]) || t[pos - 1] == '@')) return 0;
  return MatchEmailAt(t, pos);
}

constexpr std::string_view kFileExtensions[] = {
    "conf", "cfg", "ini",    "toml", "yaml", "yml",  "json",    "xml",     "txt",    "md",    "rst",
    "log",  "sh",  "bash",   "zsh",  "py",   "pl",   "rb",      "js",      "ts",     "c",     "cc",
    "cpp",  "h",   "hpp",    "go",   "rs",   "java", "desktop", "service", "socket", "timer", "so",
    "deb",  "rpm", "tar",    "gz",   "tgz",  "bz2",  "xz",      "zst",     "zip",    "iso",   "img",
    "png",  "jpg", "jpeg",   "svg",  "pdf",  "html", "htm",     "css",     "csv",    "po",    "pot",
    "mo",   "db",  "sqlite", "exe",  "dll",  "bat",  "pem"};

bool IsPathChar(std::string_view t, size_t pos, size_t* len) {
  const unsigned char b = static_cast<unsigned char>(t[pos]);
  if (b < 0x80) {
    *len = 1;
    return IsAsciiAlnum(static_cast<char>(b)) || In(static_cast<char>(b), "._-+@~%=,:*#/");
  }
  return IsTermChar(CharAt(t, pos, len));
}

// A file name with a known extension at pos ("server.conf", "README.md", "file.tar.gz").
size_t MatchFileName(std::string_view t, size_t pos) {
  if (!IsAsciiAlnum(t[pos]) && t[pos] != '_') return 0;
  size_t end = pos;
  while (end < t.size() && (IsAsciiAlnum(t[end]) || In(t[end], "._-+"))) ++end;
  if (end < t.size() && IsTermChar(CharAt(t, end))) return 0;  // "datei.txtä"
  while (end > pos && t[end - 1] == '.') --end;
  const std::string_view name = t.substr(pos, end - pos);
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= name.size()) return 0;
  // Not "Hangup.......H", "0200.H": a name has a letter and no dot runs.
  const std::string_view base = name.substr(0, dot);
  if (name.find("..") != std::string_view::npos ||
      std::none_of(base.begin(), base.end(), IsAsciiAlpha)) {
    return 0;
  }
  // Lower-case extensions, or upper-case ones of 2+ letters after a name of 3 or more
  // ("DSC0001.JPG"; not "B.C." or "FFFF.H").
  std::string ext(name.substr(dot + 1));
  const bool upper = std::all_of(ext.begin(), ext.end(),
                                 [](char c) { return !IsAsciiAlpha(c) || (c >= 'A' && c <= 'Z'); });
  if (upper && (dot < 3 || ext.size() < 2)) return 0;
  for (char& c : ext) {
    if (!upper && c >= 'A' && c <= 'Z') return 0;
    c = Lower(c);
  }
  if (std::find(std::begin(kFileExtensions), std::end(kFileExtensions), ext) ==
      std::end(kFileExtensions)) {
    return 0;
  }
  return end - pos;
}

constexpr std::string_view kWindowsStops = "<>\"|?*'`";

size_t MatchPath(std::string_view t, size_t pos) {
  if (!AtTokenStart(t, pos)) return 0;
  const size_t n = t.size();
  // Windows: C:\x, C:/x, \\server\share.
  const bool drive = pos + 3 < n && IsAsciiAlpha(t[pos]) && t[pos + 1] == ':' &&
                     (t[pos + 2] == '\\' || t[pos + 2] == '/') &&
                     UrlCharLength(t, pos + 3, kWindowsStops) > 0;
  const bool unc = pos + 2 < n && t[pos] == '\\' && t[pos + 1] == '\\' && IsAsciiAlnum(t[pos + 2]);
  if (drive || unc) {
    size_t end = pos + (drive ? 3 : 2);
    while (end < n) {
      const size_t len = UrlCharLength(t, end, kWindowsStops);
      if (len == 0) break;
      end += len;
    }
    end = TrimTrailing(t, pos, end);
    // "\\server\share" needs its share: "\\n" is an escaped newline in a message.
    if (unc && t.substr(pos + 2, end - pos - 2).find('\\') == std::string_view::npos) return 0;
    return end - pos;
  }
  size_t body = 0;
  if (t.substr(pos, 2) == "~/" || t.substr(pos, 2) == "./") {
    body = pos + 2;
  } else if (t.substr(pos, 3) == "../") {
    body = pos + 3;
  } else if (t[pos] == '/') {
    body = pos + 1;
  } else {
    return MatchFileName(t, pos);
  }
  if (body >= n) return 0;
  size_t end = body, len = 0;
  while (end < n && IsPathChar(t, end, &len)) end += len;
  end = TrimTrailing(t, body, end);
  if (end == body) return 0;
  if (t[pos] == '/') {
    // A lone "/x" needs a real name: "/etc", not "/s", "/-" or the mode "/000".
    const std::string_view rest = t.substr(body, end - body);
    const bool single = rest.find('/') == std::string_view::npos;
    const bool starts_well = single ? IsAsciiAlpha(rest[0]) || In(rest[0], "._")
                                    : IsAsciiAlnum(rest[0]) || In(rest[0], "._");
    if (!starts_well || (single && rest.size() < 2)) return 0;
  }
  // "/_View/_Go": a GTK menu path (mnemonics), text to translate.
  for (size_t q = body; q + 1 < end; ++q) {
    if (t[q] == '_' && (q == body || t[q - 1] == '/') && t[q + 1] >= 'A' && t[q + 1] <= 'Z') {
      return 0;
    }
  }
  return end - pos;
}

}  // namespace

std::vector<ProtectedSpan> FindProtectedSpans(std::string_view text,
                                              const ProtectOptions& options) {
  struct Matcher {
    size_t (*match)(std::string_view, size_t);
    SpanKind kind;
  };
  // On equal lengths the earlier matcher wins.
  static constexpr std::array<Matcher, 6> kMatchers = {{
      {MatchUrl, SpanKind::kUrl},
      {MatchEmail, SpanKind::kEmail},
      {MatchPath, SpanKind::kPath},
      {MatchPercent, SpanKind::kFormatSpecifier},
      {MatchDollar, SpanKind::kFormatSpecifier},
      {MatchBrace, SpanKind::kFormatSpecifier},
  }};

  std::vector<ProtectedSpan> spans;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = options.caller_terms ? options.caller_terms->MatchAt(text, pos).length : 0;
    SpanKind kind = SpanKind::kCallerTerm;
    const std::string* target = nullptr;
    for (const auto& glossary : options.glossaries) {
      if (glossary == nullptr) continue;
      const TermTable::Match m = glossary->MatchAt(text, pos);
      if (m.length > best) {
        best = m.length;
        kind = SpanKind::kGlossaryTerm;
        target = m.target;
      }
    }
    if (options.detect) {
      for (const Matcher& m : kMatchers) {
        const size_t len = m.match(text, pos);
        if (len > best) {
          best = len;
          kind = m.kind;
          target = nullptr;
        }
      }
    }
    if (best == 0) {
      size_t len = 1;
      CharAt(text, pos, &len);
      pos += std::max<size_t>(len, 1);
      continue;
    }
    if (!spans.empty() && spans.back().range.end == pos && target == nullptr &&
        spans.back().kind != SpanKind::kGlossaryTerm) {
      spans.back().range.end = pos + best;
    } else {
      spans.push_back({{pos, pos + best}, kind, target ? *target : std::string()});
    }
    pos += best;
  }
  return spans;
}

}  // namespace transerve::text
