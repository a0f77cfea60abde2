#include "model/translator/argos_package.h"

#include <zip.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "model/core/read_file.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

// A name that stays inside the folder it is unpacked into: relative, no "." or ".." part, no
// backslash (a Windows separator that would mean something else here), no empty part but a
// directory's trailing one.
bool IsPlainName(absl::string_view name) {
  if (name.empty() || name.front() == '/' || absl::StrContains(name, '\\')) return false;
  if (absl::EndsWith(name, "/")) name.remove_suffix(1);
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

absl::Status Unpack(zip_t* zip, const std::string& archive, const fs::path& into,
                    const UnpackLimits& limits) {
  const zip_int64_t entries = zip_get_num_entries(zip, 0);
  if (entries < 0 || entries > limits.max_entries) {
    return absl::InvalidArgumentError(
        absl::StrCat(archive, ": ", entries, " entries (at most ", limits.max_entries, ")"));
  }
  int64_t total = 0;
  std::vector<char> buffer(1 << 20);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip, static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
        !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE)) {
      return absl::InvalidArgumentError(
          absl::StrCat(archive, ": entry ", i, " is unreadable: ", zip_strerror(zip)));
    }
    const std::string name = st.name;
    if (!IsPlainName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(archive, ": entry '", name, "' would be written outside the package"));
    }
    const fs::path path = into / name;
    std::error_code ec;
    if (absl::EndsWith(name, "/")) {
      fs::create_directories(path, ec);
      if (ec) return absl::InternalError(absl::StrCat(path.string(), ": ", ec.message()));
      continue;
    }
    if (st.size > static_cast<zip_uint64_t>(limits.max_total_bytes - total)) {
      return absl::InvalidArgumentError(absl::StrCat(
          archive, ": unpacks to more than ", limits.max_total_bytes, " bytes (at '", name, "')"));
    }
    fs::create_directories(path.parent_path(), ec);
    if (ec) return absl::InternalError(absl::StrCat(path.string(), ": ", ec.message()));
    std::unique_ptr<zip_file_t, ZipFileCloser> in(
        zip_fopen_index(zip, static_cast<zip_uint64_t>(i), 0));
    if (in == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(archive, ": cannot read '", name, "': ", zip_strerror(zip)));
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
    zip_uint64_t written = 0;
    for (;;) {
      const zip_int64_t n = zip_fread(in.get(), buffer.data(), buffer.size());
      if (n < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(archive, ": '", name, "' is damaged: ", zip_file_strerror(in.get())));
      }
      if (n == 0) break;
      written += static_cast<zip_uint64_t>(n);
      if (written > st.size) {
        return absl::InvalidArgumentError(
            absl::StrCat(archive, ": '", name, "' is longer than the archive says"));
      }
      out.write(buffer.data(), n);
    }
    if (written != st.size) {
      return absl::InvalidArgumentError(absl::StrCat(archive, ": '", name, "' holds ", written,
                                                     " bytes, the archive says ", st.size));
    }
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
    total += static_cast<int64_t>(written);
  }
  return absl::OkStatus();
}

// The folder holding metadata.json: `into` itself or its one subfolder that holds it.
absl::StatusOr<std::string> PackageFolder(const std::string& archive, const fs::path& into) {
  if (IsRegularFile(into / "metadata.json")) return into.string();
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(into, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && IsRegularFile(it->path() / "metadata.json"))
      found.push_back(it->path());
  }
  if (found.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(archive, found.empty() ? ": no Argos package inside (no metadata.json)"
                                            : ": more than one package folder inside"));
  }
  return found.front().string();
}

}  // namespace

bool IsArgosPackage(const std::string& dir) {
  const fs::path d(dir);
  return IsRegularFile(d / "metadata.json") && IsRegularFile(d / "model" / "model.bin");
}

std::string WeightsFolder(const std::string& dir) {
  return IsArgosPackage(dir) ? (fs::path(dir) / "model").string() : dir;
}

bool IsArgosArchive(const std::string& path) {
  return absl::EndsWith(path, ".argosmodel") && IsRegularFile(path);
}

absl::StatusOr<std::string> UnpackArgosArchive(const std::string& archive, const std::string& into,
                                               const UnpackLimits& limits) {
  int error = 0;
  std::unique_ptr<zip_t, ZipCloser> zip(zip_open(archive.c_str(), ZIP_RDONLY, &error));
  if (zip == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    return absl::InvalidArgumentError(absl::StrCat(archive, ": not a readable zip: ", why));
  }
  std::error_code ec;
  if (!fs::create_directories(into, ec)) {
    return absl::InternalError(
        absl::StrCat("cannot create ", into, ec ? ": " + ec.message() : ": it exists"));
  }
  absl::Status unpacked = Unpack(zip.get(), archive, fs::path(into), limits);
  absl::StatusOr<std::string> folder =
      unpacked.ok() ? PackageFolder(archive, fs::path(into)) : unpacked;
  if (!folder.ok()) fs::remove_all(into, ec);
  return folder;
}

}  // namespace transerve
