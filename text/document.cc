#include "text/document.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace transerve::text {
namespace {

// Each target token of `t` to a source token: its own alignment, or, when it came without one,
// the source token at the same relative position.
std::vector<int> HardOrProportional(const AlignedTranslation& t) {
  if (t.has_alignment()) return HardAlignment(t);
  const size_t s_count = t.source_tokens.size(), t_count = t.target_tokens.size();
  std::vector<int> hard(t_count, -1);
  if (s_count == 0) return hard;
  for (size_t i = 0; i < t_count; ++i) {
    hard[i] = static_cast<int>(std::min(s_count - 1, i * s_count / std::max<size_t>(t_count, 1)));
  }
  return hard;
}

}  // namespace

Document::Document() = default;
Document::Document(Document&&) noexcept = default;
Document& Document::operator=(Document&&) noexcept = default;
Document::~Document() = default;

absl::StatusOr<Document> Document::Build(std::string_view input, const DocumentOptions& options,
                                         const SegmentLimit& limit) {
  if (options.format == Format::kHtml) {
    auto html = HtmlDocument::Parse(input, options.untranslated_elements);
    if (!html.ok()) return html.status();
    return FromFile(std::make_unique<HtmlDocument>(*std::move(html)), options, limit);
  }
  Document doc;
  doc.units_.emplace_back().marked.text = std::string(input);
  doc.AddSegments(options, limit);
  return doc;
}

Document Document::FromFile(std::unique_ptr<UnitFile> file, const DocumentOptions& options,
                            const SegmentLimit& limit) {
  Document doc;
  for (const MarkedText& marked : file->units()) doc.units_.emplace_back().marked = marked;
  doc.file_ = std::move(file);
  doc.AddSegments(options, limit);
  return doc;
}

void Document::AddSegments(const DocumentOptions& options, const SegmentLimit& limit) {
  const SplitOptions split{options.split_sentences, options.language};
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit& unit = units_[u];
    const std::string_view text = unit.marked.text;
    const bool has_tags = !unit.marked.tags.empty();
    auto add_segment = [&](ByteRange r) {
      Segment seg;
      seg.unit = u;
      seg.range = r;
      seg.protect = Protect(text.substr(r.begin, r.end - r.begin), options.protect);
      seg.needs_alignment = has_tags || !seg.protect.spans.empty();
      unit.items.push_back({{}, static_cast<int>(segments_.size())});
      segments_.push_back(std::move(seg));
    };
    auto add_layout = [&](ByteRange r) {
      if (!r.empty()) unit.items.push_back({r, -1});
    };
    for (const TextPiece& piece : SplitSentences(text, split)) {
      if (!piece.translate) {
        add_layout(piece.range);
        continue;
      }
      const std::string_view sentence =
          text.substr(piece.range.begin, piece.range.end - piece.range.begin);
      if (limit.max_units <= 0 || !options.split_sentences ||
          limit.units(sentence) <= limit.max_units) {
        add_segment(piece.range);
        continue;
      }
      // Over the model's limit: cut, each part its own segment, the spaces at the cuts layout.
      for (const ByteRange& part : CutLongSentence(sentence, limit.max_units, limit.units)) {
        ByteRange r{piece.range.begin + part.begin, piece.range.begin + part.end};
        size_t b = r.begin, e = r.end;
        while (b < e && (text[b] == ' ' || text[b] == '\t')) ++b;
        while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
        add_layout({r.begin, b});
        if (b < e) add_segment({b, e});
        add_layout({e, r.end});
      }
    }
  }
}

AlignedTranslation Document::Restore(size_t i, AlignedTranslation t) const {
  return Unprotect(segments_[i].protect, std::move(t));
}

std::string Document::Escape(const Unit& unit, std::string_view s) const {
  if (!file_) return std::string(s);
  return file_->EscapeUnitText(static_cast<size_t>(&unit - units_.data()), s);
}

std::string Document::AssembleUnit(const Unit& unit,
                                   std::span<const AlignedTranslation> restored) const {
  const std::string& text = unit.marked.text;
  if (unit.marked.tags.empty()) {
    std::string out;
    for (const Unit::Item& item : unit.items) {
      out += item.segment < 0
                 ? Escape(unit, std::string_view(text).substr(item.layout.begin,
                                                              item.layout.end - item.layout.begin))
                 : Escape(unit, restored[item.segment].target);
    }
    return out;
  }
  // Inline tags may span sentences: the unit's translation is one alignment built from its
  // segments' (layout maps to itself), and the tags go back over the whole of it. It is a hard
  // alignment: a dense one over a whole block would grow with the square of its tokens.
  AlignedTranslation whole;
  whole.source = text;
  struct Block {
    size_t src_first, tgt_first;
    const AlignedTranslation* t;  // null: a layout token
  };
  std::vector<Block> blocks;
  for (const Unit::Item& item : unit.items) {
    if (item.segment < 0) {
      blocks.push_back({whole.source_tokens.size(), whole.target_tokens.size(), nullptr});
      whole.source_tokens.push_back(item.layout);
      const size_t at = whole.target.size();
      whole.target.append(text, item.layout.begin, item.layout.end - item.layout.begin);
      whole.target_tokens.push_back({at, whole.target.size()});
      continue;
    }
    const Segment& seg = segments_[item.segment];
    const AlignedTranslation& r = restored[item.segment];
    blocks.push_back({whole.source_tokens.size(), whole.target_tokens.size(), &r});
    for (const ByteRange& s : r.source_tokens) {
      whole.source_tokens.push_back({seg.range.begin + s.begin, seg.range.begin + s.end});
    }
    const size_t at = whole.target.size();
    for (const ByteRange& t : r.target_tokens) {
      whole.target_tokens.push_back({at + t.begin, at + t.end});
    }
    whole.target += r.target;
  }
  whole.hard.assign(whole.target_tokens.size(), -1);
  for (const Block& b : blocks) {
    if (b.t == nullptr) {
      whole.hard[b.tgt_first] = static_cast<int>(b.src_first);
      continue;
    }
    const std::vector<int> own = HardOrProportional(*b.t);
    for (size_t ti = 0; ti < own.size(); ++ti) {
      if (own[ti] >= 0) whole.hard[b.tgt_first + ti] = static_cast<int>(b.src_first) + own[ti];
    }
  }
  return InsertTags(unit.marked, whole, [&](std::string_view s) { return Escape(unit, s); });
}

std::string Document::Assemble(std::span<const AlignedTranslation> restored) const {
  if (units_.empty()) return "";
  if (!file_) return AssembleUnit(units_.front(), restored);
  std::vector<std::string> outputs;
  outputs.reserve(units_.size());
  for (const Unit& unit : units_) outputs.push_back(AssembleUnit(unit, restored));
  return file_->Render(outputs);
}

std::string Document::Prefix(size_t i) const {
  // Plain text: one unit. The layout items after segment i-1 and before segment i.
  if (units_.empty()) return "";
  const Unit& unit = units_.front();
  std::string out;
  bool in_range = i == 0;
  for (const Unit::Item& item : unit.items) {
    if (item.segment >= 0) {
      if (static_cast<size_t>(item.segment) == i) break;
      in_range = static_cast<size_t>(item.segment) + 1 == i;
      continue;
    }
    if (in_range)
      out.append(unit.marked.text, item.layout.begin, item.layout.end - item.layout.begin);
  }
  return out;
}

std::string Document::Suffix() const {
  if (units_.empty()) return "";
  const Unit& unit = units_.front();
  std::string out;
  for (auto it = unit.items.rbegin(); it != unit.items.rend() && it->segment < 0; ++it) {
    out.insert(0, unit.marked.text, it->layout.begin, it->layout.end - it->layout.begin);
  }
  return out;
}

}  // namespace transerve::text
