// Spans that must pass through translation untouched: format specifiers, URLs, e-mail
// addresses, file paths and terms the caller names. The model sees a stand-in it copies well;
// the original bytes go back where the model put the stand-in, or where the alignment says.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/aligned_translation.h"

namespace transerve::text {

enum class SpanKind { kFormatSpecifier, kUrl, kEmail, kPath, kCallerTerm };

struct ProtectedSpan {
  ByteRange range;  // in the original text
  SpanKind kind;
};

struct ProtectOptions {
  bool detect = true;                     // find specifiers, URLs, e-mails, paths
  std::vector<std::string> caller_terms;  // literal terms to keep (do-not-translate list)
};

// Spans in text order, not overlapping.
std::vector<ProtectedSpan> FindProtectedSpans(std::string_view text, const ProtectOptions& options);

struct ProtectedText {
  std::string original;
  std::string model_text;  // `original` with each span replaced by its stand-in
  std::vector<ProtectedSpan> spans;
  std::vector<ByteRange> stand_ins;  // each span's stand-in in model_text
};

ProtectedText Protect(std::string_view text, const ProtectOptions& options);

// The translation of `p.model_text` turned into the translation of `p.original`: every span's
// original bytes present exactly once (where the model copied its stand-in, else where the
// alignment puts it), `source` = p.original with the token ranges mapped onto it, and the
// target token ranges moved with the edits.
AlignedTranslation Unprotect(const ProtectedText& p, AlignedTranslation t);

}  // namespace transerve::text
