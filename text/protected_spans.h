// Spans that must pass through translation untouched: format specifiers, URLs, e-mail
// addresses, file paths and terms the caller names; and glossary terms, which come out as their
// target term. The model sees a stand-in it copies well; the span's bytes (or its target term)
// go back where the model put the stand-in, or where the alignment says.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/aligned_translation.h"
#include "text/term_table.h"

namespace transerve::text {

enum class SpanKind { kFormatSpecifier, kUrl, kEmail, kPath, kCallerTerm, kGlossaryTerm };

struct ProtectedSpan {
  ByteRange range;  // in the original text
  SpanKind kind;
  // A glossary term's target: what the translation holds in its place (other spans: their
  // own bytes, and this is empty).
  std::string target;
};

struct ProtectOptions {
  bool detect = true;  // find specifiers, URLs, e-mails, paths
  // Literal terms to keep (a do-not-translate list), compiled once per request: KeptTerms().
  std::shared_ptr<const TermTable> caller_terms;
  // Terms to translate one way: a request's own, a stored glossary's. At one position the
  // longest match wins, and of equal ones the earlier table's.
  std::vector<std::shared_ptr<const TermTable>> glossaries;
};

// Spans in text order, not overlapping; spans that touch (`%d%%`, `${HOME}/bin`) are merged
// into one, of the first one's kind. What counts as a span:
//  - format specifiers: printf (`%s %5.2f %-10s %lu %1$s %*d %%`; no space flag, so "50% of"
//    is text, and a bare letter between a digit and letters is too: "50%off"), Python
//    `%(name)s`, glibc `%m`, wide `%S`, GCC `%qs`, ObjC `%@`, Qt `%1` `%L1`; brace
//    placeholders `{0} {name} {0:N2} {0,-10} {}`; `{{ var }}` templates (so "{{ a }}" is
//    always one span) and otherwise the escapes `{{` `}}`; shell/template variables `$VAR
//    ${var} $(cmd)` and `$1` (but "$10" and "$5.00" are money);
//  - URLs with a scheme (http, https, ftp, file, mailto) or `www.` plus a dotted host, up to
//    whitespace, a quote, `<` `>` or non-letter non-ASCII (» “), without trailing sentence
//    punctuation (a closing bracket stays when the URL opened it);
//  - e-mail addresses: ASCII local part, a domain of two or more labels ending in 2+ letters
//    ("root@localhost" is not one);
//  - paths: `/abs/path` (a single component must start with a letter: "/etc", not "/000";
//    no `/_Menu/_Item` mnemonics), `~/x`, `./x`, `../x`, `C:\x`, `C:/x`, `\\server\share`,
//    and bare file names with a letter, no "..", and a known extension, lower case or (2+
//    letters) after a 3+ character name in upper case (`server.conf`, `README.md`,
//    `DSC01.JPG`, not "B.C." or "FFFF.H"). None glued to a word or after `< > / .`: "and/or",
//    "km/h" and "</b>" are text;
//  - caller terms: literal, case-sensitive, longest first, never starting or ending inside a
//    word; glossary terms the same, with their case variants (term_table.h).
// At one position the longest candidate wins; on a tie a caller term, then a glossary term.
// Spans that touch are merged only when neither is a glossary term (a merged span keeps its
// bytes; a glossary term's target is its own).
std::vector<ProtectedSpan> FindProtectedSpans(std::string_view text, const ProtectOptions& options);

struct ProtectedText {
  std::string original;
  std::string model_text;  // `original` with each span replaced by its stand-in
  std::vector<ProtectedSpan> spans;
  std::vector<ByteRange> stand_ins;  // each span's stand-in in model_text
};

// Each span becomes a numbered Qt-style stand-in `%1`, `%2`, ... (numbers whose `%N` already
// occurs in the text are skipped): the stand-in the en-de model copied exactly once most often
// (bench/placeholder_standins.py). A span glued to a digit, where a stand-in would run into the
// number ("%1" then "1" reads as "%11"), stays in the text unprotected and out of `spans`.
// A glossary term's stand-in is its target term itself: the model reads a word in a sentence
// rather than a placeholder, which keeps the words around it as they would be
// (bench/glossary_eval.py measures both).
ProtectedText Protect(std::string_view text, const ProtectOptions& options);

// The stand-in Protect writes for number `n` (1-based).
std::string StandIn(int n);

// The translation of `p.model_text` turned into the translation of `p.original`: every span's
// target present exactly once (where the model copied its stand-in, else where the
// alignment puts it), `source` = p.original with the token ranges mapped onto it, and the
// target token ranges moved with the edits.
//  - A stand-in copied once is replaced by the span's target (its bytes, or its glossary
//    target term); tokens inside it cover them.
//  - A glossary term's stand-in (its target) is left where the model wrote it, alone or inside
//    a longer word the model made of it (a compound, an inflection): each copy answers for one
//    occurrence, in order; an occurrence without one is missing, as below.
//  - Copied more than once: the copy nearest MapSourceRange of the stand-in stays, the others
//    are deleted with one adjoining space.
//  - Missing: the span replaces the target words the stand-in aligns to when they still hold
//    the stand-in's `%` (an altered copy such as `% 1`), else goes in before them, else at
//    MapSourcePoint; separated by spaces from the words around it.
// `t.source` must be `p.model_text`; when it is not, the alignment describes some other text
// and is dropped (no source tokens, no weights) and missing spans go at the end.
AlignedTranslation Unprotect(const ProtectedText& p, AlignedTranslation t);

}  // namespace transerve::text
