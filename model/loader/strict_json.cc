// Strict JSON parsing: a SAX handler that builds the document itself so it can see every key.
#include "model/loader/strict_json.h"

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/core/read_file.h"

namespace transerve {
namespace {

using Json = nlohmann::json;

std::string Quote(std::string_view s) {
  // The replace handler keeps dump() from throwing if a caller passes invalid UTF-8.
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Builds a nlohmann::json while parsing. nlohmann's own DOM builder overwrites duplicate keys, so
// detecting them needs the key callback, and aborting early needs our own error state.
class StrictDomBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit StrictDomBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return AddValue(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return AddValue(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return AddValue(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return AddValue(Json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t& /*raw*/) {
    return AddValue(Json(v)) != nullptr;
  }
  bool string(string_t& v) { return AddValue(Json(std::move(v))) != nullptr; }
  bool binary(binary_t& /*v*/) {
    // Only reachable for binary input formats, which we never parse.
    error_ = "binary values are not JSON";
    return false;
  }

  bool start_object(std::size_t /*elements*/) { return Open(Json::object()); }
  bool start_array(std::size_t /*elements*/) { return Open(Json::array()); }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }

  bool key(string_t& k) {
    Frame& top = stack_.back();
    if (top.node->contains(k)) {
      error_ = absl::StrCat("duplicate key ", Quote(k), " in the object at ", Path());
      return false;
    }
    top.pending_key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const Json::exception& ex) {
    syntax_error_ = true;
    position_ = position;
    // what() reads "[json.exception.parse_error.101] parse error at line 1, column 5: <detail>";
    // keep only the detail since we report the position ourselves.
    std::string_view what = ex.what();
    if (auto p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
    if (what.starts_with("parse error")) {
      if (auto p = what.find(": "); p != std::string_view::npos) what.remove_prefix(p + 2);
    }
    error_ = std::string(what);
    return false;
  }

  Json& root() { return root_; }
  const std::string& error() const { return error_; }
  bool syntax_error() const { return syntax_error_; }
  std::size_t position() const { return position_; }

 private:
  struct Frame {
    Json* node;
    std::string pending_key;  // Objects only: the key whose value comes next.
  };

  // Inserts `value` at the current position and returns where it now lives.
  Json* AddValue(Json&& value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.node->is_array()) {
      top.node->push_back(std::move(value));
      return &top.node->back();
    }
    auto& object = top.node->get_ref<Json::object_t&>();
    // Copy, not move: Path() still needs the key while this value's children are parsed.
    auto it = object.emplace(top.pending_key, std::move(value)).first;
    return &it->second;
  }

  bool Open(Json&& container) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      error_ = absl::StrCat("nesting deeper than ", max_depth_, " levels at ", Path());
      return false;
    }
    // Pointers into parents stay valid: a parent is only modified again after this child closes.
    Json* node = AddValue(std::move(container));
    stack_.push_back(Frame{node, {}});
    return true;
  }

  // JSON-pointer-like path of the innermost open container, for messages.
  std::string Path() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.node->is_array()) {
        absl::StrAppend(&path, "/", f.node->size() - 1);
      } else {
        absl::StrAppend(&path, "/", f.pending_key);
      }
    }
    if (path.empty()) return "/ (top level)";
    constexpr std::size_t kMaxPath = 120;  // Deeply nested input would make a useless message.
    if (path.size() > kMaxPath) path = path.substr(0, kMaxPath) + "...";
    return path;
  }

  int max_depth_;
  Json root_;
  std::vector<Frame> stack_;
  std::string error_;
  bool syntax_error_ = false;
  std::size_t position_ = 0;
};

}  // namespace

absl::StatusOr<nlohmann::json> ParseJsonStrict(std::string_view text,
                                               std::string_view source_name_std, int max_depth) {
  // Debian's Abseil does not alias absl::string_view to std::string_view.
  const absl::string_view source_name(source_name_std.data(), source_name_std.size());
  StrictDomBuilder builder(max_depth);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.data(), text.data() + text.size(), &builder,
                         Json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/false);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(source_name, ": out of memory while parsing JSON"));
  } catch (const std::exception& e) {
    // The parser reports errors through the handler; this is a guard, not an expected path.
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": invalid JSON: ", e.what()));
  }
  if (ok) return std::move(builder.root());
  if (builder.syntax_error()) {
    // nlohmann's position counts characters read, i.e. it points one past the offending byte.
    const std::size_t pos = std::min(builder.position(), text.size());
    const std::string_view before = text.substr(0, pos > 0 ? pos - 1 : 0);
    const std::size_t line = 1 + std::count(before.begin(), before.end(), '\n');
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column =
        before.size() - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": invalid JSON at line ", line,
                                                   ", column ", column, " (byte ", pos,
                                                   "): ", builder.error()));
  }
  return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", builder.error()));
}

absl::StatusOr<nlohmann::json> ReadJsonFileStrict(const std::string& path, int max_depth) {
  absl::StatusOr<std::string> text = ReadWholeFile(path, "JSON file");
  if (!text.ok()) return text.status();
  return ParseJsonStrict(*text, path, max_depth);
}

std::string DescribeJsonValue(const nlohmann::json& value) {
  constexpr std::size_t kMaxText = 40;
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_null()) return "null";
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxText) text = text.substr(0, kMaxText) + "...";
  const char* kind = value.is_string()           ? "string"
                     : value.is_boolean()        ? "boolean"
                     : value.is_number_integer() ? "integer"
                                                 : "number";
  return absl::StrCat(kind, " ", text);
}

}  // namespace transerve
