// What a Document needs of a format that reads a whole file into units (HtmlDocument here, the
// file layer's formats above): the units to translate, how a unit's text is written (its
// escaping), and the file written again from the units' translations.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/marked_text.h"

namespace transerve::text {

class UnitFile {
 public:
  virtual ~UnitFile() = default;
  // The translatable units, in file order, inline markup lifted out.
  virtual const std::vector<MarkedText>& units() const = 0;
  // A run of unit `unit`'s text as the file writes it (InsertTags's `escape`).
  virtual std::string EscapeUnitText(size_t unit, std::string_view text) const = 0;
  // The file with unit i replaced by `translations[i]` (markup inserted, text escaped).
  virtual std::string Render(const std::vector<std::string>& translations) const = 0;
};

}  // namespace transerve::text
