// A document as the model sees it and as its reader gets it back: the input (plain text or an
// HTML fragment) cut into segments - sentences, with protected spans replaced by stand-ins - and
// the translations of those segments put back together with the input's layout and markup.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/aligned_translation.h"
#include "text/html_document.h"
#include "text/marked_text.h"
#include "text/protected_spans.h"
#include "text/sentence_splitter.h"
#include "text/unit_file.h"

namespace transerve::text {

enum class Format { kText, kHtml };

struct DocumentOptions {
  Format format = Format::kText;
  bool split_sentences = true;  // false: one segment per line (text) or per block (HTML)
  std::string language = "en";  // the source's, for its sentence break rules
  ProtectOptions protect;
  // HTML: elements (tag names, lower case) whose content stays as it is, as translate="no".
  std::vector<std::string> untranslated_elements;
};

// A segment the model would refuse (over `max_units` as `units` counts them, e.g. its tokens)
// is cut at safe points into several. max_units 0: no limit.
struct SegmentLimit {
  int max_units = 0;
  std::function<int(std::string_view)> units;
};

class Document {
 public:
  static absl::StatusOr<Document> Build(std::string_view input, const DocumentOptions& options,
                                        const SegmentLimit& limit);
  // A file a format's reader cut into units (options.format is not read): each unit is cut
  // into segments as an HTML block is, and Assemble writes the file through file->Render.
  static Document FromFile(std::unique_ptr<UnitFile> file, const DocumentOptions& options,
                           const SegmentLimit& limit);

  Document();  // an empty document: no segments, nothing to write
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;
  ~Document();

  size_t segment_count() const { return segments_.size(); }
  // What the model translates (stand-ins in place of protected spans).
  const std::string& model_text(size_t i) const { return segments_[i].protect.model_text; }
  // The segment as the input wrote it (entities decoded, markup lifted out).
  const std::string& source_text(size_t i) const { return segments_[i].protect.original; }
  // Whether putting segment i back needs its alignment (inline tags or protected spans).
  bool needs_alignment(size_t i) const { return segments_[i].needs_alignment; }

  // Segment i's translation (t.source == model_text(i)) as a translation of source_text(i):
  // protected spans restored, no markup.
  AlignedTranslation Restore(size_t i, AlignedTranslation t) const;

  // The translated document: `restored[i]` is Restore(i, ...) of segment i's translation.
  std::string Assemble(std::span<const AlignedTranslation> restored) const;

  // Plain text only (no markup): the output can be sent in order as segments complete.
  // Assemble() == Prefix(0) + r0.target + ... + Prefix(n-1) + r(n-1).target + Suffix().
  bool streams_by_segment() const { return !file_; }
  std::string Prefix(size_t i) const;  // the layout between segment i-1 (or the start) and i
  std::string Suffix() const;          // the layout after the last segment

 private:
  struct Segment {
    size_t unit = 0;
    ByteRange range;  // in the unit's text
    ProtectedText protect;
    bool needs_alignment = false;
  };
  struct Unit {
    MarkedText marked;
    // Layout and segments in order: layout is a range of marked.text, a segment its index.
    struct Item {
      ByteRange layout;
      int segment = -1;
    };
    std::vector<Item> items;
  };

  // Cuts every unit into segments and layout.
  void AddSegments(const DocumentOptions& options, const SegmentLimit& limit);
  std::string AssembleUnit(const Unit& unit, std::span<const AlignedTranslation> restored) const;
  std::string Escape(const Unit& unit, std::string_view s) const;

  std::unique_ptr<UnitFile> file_;  // null for plain text
  std::vector<Unit> units_;
  std::vector<Segment> segments_;
};

}  // namespace transerve::text
