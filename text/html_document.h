// An HTML (or XML-like) fragment parsed with a real HTML5 parser (gumbo), cut into the units a
// translator sees: the text of each block with its inline markup lifted out, and each
// translatable attribute (title, alt, placeholder, aria-label). Everything else - other
// attributes, comments, script/style/code/pre, translate="no" - is written back byte for byte.
//
// Inside a block, inline elements (and unknown ones, as XML's <x:g>) become tags holding their
// source bytes. Void elements, comments, a self-closed <ph/>, and untranslated elements inside a
// sentence (an inline <code>, <span translate="no">) are void tags holding all their bytes: the
// model never sees them and they stay next to the words around them. An end tag the source
// omitted is written where the translation needs one and left out where it stood as in the
// source. Where gumbo's tree does not follow the source order (misnested tags it repaired), the
// block is copied untranslated. Text keeps its whitespace; a unit of whitespace is no unit.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/marked_text.h"
#include "text/unit_file.h"

namespace transerve::text {

class HtmlDocument : public UnitFile {
 public:
  // INVALID_ARGUMENT only where the input cannot be handled safely (nesting deeper than a
  // fixed limit); any other input, however broken, parses as a browser would.
  // `untranslated_elements` (tag names in lower case) keep their content as it is, like
  // `translate="no"` elements (DeepL's ignore_tags).
  static absl::StatusOr<HtmlDocument> Parse(
      std::string_view html, const std::vector<std::string>& untranslated_elements = {});

  HtmlDocument(HtmlDocument&&) noexcept;
  HtmlDocument& operator=(HtmlDocument&&) noexcept;
  ~HtmlDocument() override;

  // The translatable units, in document order. Entities are decoded in their text.
  const std::vector<MarkedText>& units() const override;
  // The document with unit i replaced by `translations[i]` (as InsertTags wrote it, through
  // EscapeText for a block or EscapeAttribute for an attribute); all else byte for byte.
  std::string Render(const std::vector<std::string>& translations) const override;
  // Whether unit i is an attribute value (escaped with EscapeAttribute) or block text.
  bool IsAttribute(size_t unit) const;
  // EscapeAttribute for an attribute's unit, else EscapeText.
  std::string EscapeUnitText(size_t unit, std::string_view text) const override;

  // Escapes text for the output: &, <, > (and " in attributes), characters the source wrote as
  // entities written again as those entities.
  std::string EscapeText(std::string_view text) const;
  std::string EscapeAttribute(std::string_view text) const;

 private:
  struct Impl;
  explicit HtmlDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace transerve::text
