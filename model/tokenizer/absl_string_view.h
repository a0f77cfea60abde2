// Debian's Abseil is built with its own absl::string_view (not an alias of std::string_view), so
// absl::StrCat and absl's string-keyed hash maps need an explicit conversion from std::string_view.
#ifndef TRANSERVE_MODEL_TOKENIZER_ABSL_STRING_VIEW_H_
#define TRANSERVE_MODEL_TOKENIZER_ABSL_STRING_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace transerve {

inline absl::string_view AbslView(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_ABSL_STRING_VIEW_H_
