#include "server/glossaries/glossary_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/core/logging.h"
#include "model/core/read_file.h"
#include "text/language_code.h"
#include "text/utf8_chars.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kSuffix[] = ".json";
constexpr char kTempMark[] = ".tmp-";

std::string NewId() {
  static absl::Mutex mu(absl::kConstInit);
  static std::mt19937_64* rng = nullptr;
  absl::MutexLock lock(&mu);
  if (rng == nullptr) {
    std::random_device device;
    rng = new std::mt19937_64((static_cast<uint64_t>(device()) << 32) ^ device());
  }
  const uint64_t hi = (*rng)(), lo = (*rng)();
  // A version 4 (random) UUID.
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", hi >> 32, (hi >> 16) & 0xffff, hi & 0xfff,
                         0x8000 | ((lo >> 48) & 0x3fff), lo & 0xffffffffffffULL);
}

bool IsId(const std::string& id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status NotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("no glossary has the id '", id.substr(0, 64), "'"));
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Flushes a folder's entries (a rename or an unlink in it) to disk.
void SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

// Writes `bytes` to `path` so that a crash leaves the old file or the new one: a temporary file
// beside it, flushed to disk, renamed over it, and the directory flushed.
absl::Status WriteAtomically(const fs::path& path, const std::string& bytes) {
  const std::string temp = absl::StrCat(path.string(), kTempMark, NewId().substr(0, 8));
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", temp);
  const auto fail = [&](const char* what, const std::string& name) {
    const absl::Status s = Errno(what, name);
    close(fd);
    unlink(temp.c_str());
    return s;
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write", temp);
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("cannot flush", temp);
  if (rename(temp.c_str(), path.c_str()) != 0) return fail("cannot rename into", path.string());
  close(fd);
  SyncDirectory(path.parent_path().string());
  return absl::OkStatus();
}

Json ToJson(const Glossary& g) {
  Json dictionaries = Json::array();
  for (const GlossaryDictionary& d : g.dictionaries) {
    Json entries = Json::array();
    for (const text::Term& t : d.entries) entries.push_back({t.source, t.target});
    dictionaries.push_back({{"source_language", d.source_language},
                            {"target_language", d.target_language},
                            {"entries", std::move(entries)}});
  }
  return {{"glossary_id", g.id},
          {"name", g.name},
          {"creation_time", absl::FormatTime(absl::RFC3339_full, g.created, absl::UTCTimeZone())},
          {"dictionaries", std::move(dictionaries)}};
}

// The glossary a file holds (unchecked: Check follows), or why it cannot be read.
absl::StatusOr<Glossary> FromJson(const std::string& bytes) {
  const Json j = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::DataLossError("not a JSON object");
  Glossary g;
  try {
    g.id = j.at("glossary_id").get<std::string>();
    g.name = j.at("name").get<std::string>();
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, j.at("creation_time").get<std::string>(), &g.created,
                         &error)) {
      return absl::DataLossError(absl::StrCat("creation_time: ", error));
    }
    for (const Json& d : j.at("dictionaries")) {
      GlossaryDictionary& out = g.dictionaries.emplace_back();
      out.source_language = d.at("source_language").get<std::string>();
      out.target_language = d.at("target_language").get<std::string>();
      for (const Json& e : d.at("entries")) {
        if (!e.is_array() || e.size() != 2) return absl::DataLossError("an entry is not a pair");
        out.entries.push_back({e[0].get<std::string>(), e[1].get<std::string>()});
      }
    }
  } catch (const Json::exception& e) {
    return absl::DataLossError(e.what());
  }
  return g;
}

// What identifies one version of a file: a rewrite is a new file renamed in (a new inode).
std::optional<FileStamp> StampOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{static_cast<uint64_t>(st.st_ino),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_size)};
}

bool SamePair(const GlossaryDictionary& a, const GlossaryDictionary& b) {
  return a.source_language == b.source_language && a.target_language == b.target_language;
}

// `base`'s entries, then `more`'s: one whose source `base` has replaces that entry in place.
std::vector<text::Term> Merged(const std::vector<text::Term>& base,
                               const std::vector<text::Term>& more) {
  std::vector<text::Term> out = base;
  std::unordered_map<std::string, size_t> at;
  for (size_t i = 0; i < out.size(); ++i) at.emplace(out[i].source, i);
  for (const text::Term& t : more) {
    const auto it = at.find(t.source);
    if (it != at.end()) {
      out[it->second].target = t.target;
    } else {
      at.emplace(t.source, out.size());
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace

const GlossaryDictionary* Glossary::Find(const std::string& source,
                                         const std::string& target) const {
  const std::string s = text::CanonicalLanguage(source), t = text::CanonicalLanguage(target);
  for (const GlossaryDictionary& d : dictionaries) {
    if (d.source_language == s && d.target_language == t) return &d;
  }
  return nullptr;
}

std::string Glossary::MissingPair(const std::string& source, const std::string& target) const {
  std::string pairs;
  for (const GlossaryDictionary& d : dictionaries) {
    absl::StrAppend(&pairs, pairs.empty() ? "" : ", ", d.source_language, "-", d.target_language);
  }
  return absl::StrCat("glossary '", id, "' has no dictionary from '", source.substr(0, 32),
                      "' to '", target.substr(0, 32), "' (it has ", pairs, ")");
}

size_t Glossary::entry_count() const {
  size_t n = 0;
  for (const GlossaryDictionary& d : dictionaries) n += d.entries.size();
  return n;
}

absl::StatusOr<std::unique_ptr<GlossaryStore>> GlossaryStore::Open(const std::string& dir,
                                                                   GlossaryLimits limits) {
  auto store = std::unique_ptr<GlossaryStore>(new GlossaryStore(dir, limits));
  if (dir.empty()) return store;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot use '", dir, "' as the glossaries' directory: ", ec.message()));
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(kTempMark) != std::string::npos) {
      // A write a crash interrupted: the file it was to replace is still whole.
      fs::remove(e.path(), ec);
      continue;
    }
    if (e.is_regular_file() && e.path().extension() == kSuffix) files.push_back(e.path());
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  for (const fs::path& path : files) {
    const std::optional<FileStamp> stamp = StampOf(path.string());
    auto g = store->ReadGlossaryFile(path, path.stem().string());
    if (!stamp || !g.ok()) {
      const std::string aside = path.string() + ".unreadable";
      fs::rename(path, aside, ec);
      Log().error("glossary file {} cannot be read ({}); moved to {}", path.string(),
                  std::string(g.status().message()), aside);
      continue;
    }
    store->Publish(*std::move(g), *stamp);
  }
  return store;
}

absl::Status GlossaryStore::Check(const std::string& name,
                                  std::vector<GlossaryDictionary>* dictionaries) const {
  if (name.empty() || !text::TermProblem(name).empty() ||
      text::CountCodePoints(name) > limits_.max_name_chars) {
    return absl::InvalidArgumentError(
        absl::StrCat("the name must be 1 to ", limits_.max_name_chars,
                     " characters of valid UTF-8 without control characters or line breaks, "
                     "and without white space at either end"));
  }
  if (dictionaries->empty()) {
    return absl::InvalidArgumentError("a glossary needs at least one dictionary (language pair)");
  }
  int64_t bytes = 0;
  for (size_t i = 0; i < dictionaries->size(); ++i) {
    GlossaryDictionary& d = (*dictionaries)[i];
    const std::string where = absl::StrCat("dictionaries[", i, "]");
    const std::string source = text::CanonicalLanguage(d.source_language);
    const std::string target = text::CanonicalLanguage(d.target_language);
    if (source.empty() || target.empty() || source == "mul" || target == "mul") {
      return absl::InvalidArgumentError(absl::StrCat(where, ": '", d.source_language.substr(0, 32),
                                                     "' to '", d.target_language.substr(0, 32),
                                                     "' is not a pair of language codes"));
    }
    if (source == target) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": source and target language are both '", source, "'"));
    }
    d.source_language = source;
    d.target_language = target;
    for (size_t k = 0; k < i; ++k) {
      if (SamePair((*dictionaries)[k], d)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": dictionaries[", k, "] is also ", source, " to ", target));
      }
    }
    if (d.entries.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has no entries"));
    }
    std::unordered_map<std::string, size_t> seen;
    for (size_t e = 0; e < d.entries.size(); ++e) {
      const text::Term& t = d.entries[e];
      for (const auto& [side, term] : {std::pair{"source", &t.source}, {"target", &t.target}}) {
        if (const std::string why = text::TermProblem(*term); !why.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".entries[", e, "]: the ", side, " term ", why));
        }
      }
      if (const auto [it, fresh] = seen.emplace(t.source, e); !fresh) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ".entries[", e, "]: its source term is also entries[", it->second, "]'s"));
      }
      bytes += static_cast<int64_t>(t.source.size() + t.target.size());
    }
    if (bytes > limits_.max_glossary_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("the glossary's terms take over ",
                                                       limits_.max_glossary_bytes,
                                                       " bytes, this server's limit per glossary"));
    }
  }
  std::sort(dictionaries->begin(), dictionaries->end(), [](const auto& a, const auto& b) {
    return std::tie(a.source_language, a.target_language) <
           std::tie(b.source_language, b.target_language);
  });
  return absl::OkStatus();
}

namespace {

// Each dictionary without its table (new, or its entries changed) gets one.
void Compile(std::vector<GlossaryDictionary>* dictionaries) {
  for (GlossaryDictionary& d : *dictionaries) {
    if (d.table == nullptr) {
      d.table =
          std::make_shared<const text::TermTable>(d.entries, text::TermCase::kSentenceAndCapitals);
    }
  }
}

}  // namespace

std::string GlossaryStore::PathOf(const std::string& id) const {
  return (fs::path(dir_) / absl::StrCat(id, kSuffix)).string();
}

absl::StatusOr<std::shared_ptr<const Glossary>> GlossaryStore::ReadGlossaryFile(
    const fs::path& path, const std::string& id) const {
  auto bytes = ReadWholeFile(path.string(), "glossary file");
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<Glossary> g = FromJson(*bytes);
  if (!g.ok()) return g.status();
  if (!IsId(g->id) || g->id != id) {
    return absl::DataLossError("its glossary_id is not its file's name");
  }
  if (auto s = Check(g->name, &g->dictionaries); !s.ok()) return s;
  Compile(&g->dictionaries);
  return std::make_shared<const Glossary>(*std::move(g));
}

absl::StatusOr<FileStamp> GlossaryStore::Persist(const std::string& id, const Glossary* glossary) {
  if (dir_.empty()) return FileStamp{};
  const std::string path = PathOf(id);
  if (glossary != nullptr) {
    if (auto s = WriteAtomically(path, ToJson(*glossary).dump()); !s.ok()) return s;
    const std::optional<FileStamp> stamp = StampOf(path);
    if (!stamp) return Errno("cannot stat", path);
    return *stamp;
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", path);
  SyncDirectory(dir_);
  return FileStamp{};
}

void GlossaryStore::Publish(std::shared_ptr<const Glossary> glossary, FileStamp stamp) const {
  const std::string id = glossary->id;
  absl::MutexLock lock(&mu_);
  by_id_[id] = {std::move(glossary), stamp};
}

void GlossaryStore::Forget(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  by_id_.erase(id);
}

absl::StatusOr<std::shared_ptr<const Glossary>> GlossaryStore::Create(
    std::string name, std::vector<GlossaryDictionary> dictionaries) {
  if (auto s = Check(name, &dictionaries); !s.ok()) return s;
  Compile(&dictionaries);
  absl::MutexLock write(&write_mu_);
  if (static_cast<int>(List().size()) >= limits_.max_glossaries) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this server keeps at most ", limits_.max_glossaries, " glossaries: delete one first"));
  }
  auto g = std::make_shared<Glossary>();
  g->id = NewId();
  g->name = std::move(name);
  // At full precision (the file keeps it): glossaries made within one second list in order.
  g->created = absl::Now();
  g->dictionaries = std::move(dictionaries);
  auto stamp = Persist(g->id, g.get());
  if (!stamp.ok()) return stamp.status();
  Publish(g, *stamp);
  return g;
}

std::vector<std::shared_ptr<const Glossary>> GlossaryStore::List() const {
  std::vector<std::shared_ptr<const Glossary>> out;
  if (dir_.empty()) {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, held] : by_id_) out.push_back(held.glossary);
  } else {
    // The directory is the truth: other servers may share it.
    std::set<std::string> ids;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
      const std::string id = e.path().stem().string();
      if (e.path().extension() == kSuffix && IsId(id)) ids.insert(id);
    }
    for (const std::string& id : ids) {
      if (auto g = Get(id); g.ok()) out.push_back(*std::move(g));
    }
    absl::MutexLock lock(&mu_);
    for (auto it = by_id_.begin(); it != by_id_.end();) {
      it = ids.count(it->first) ? std::next(it) : by_id_.erase(it);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a->created < b->created; });
  return out;
}

absl::StatusOr<std::shared_ptr<const Glossary>> GlossaryStore::Get(const std::string& id) const {
  if (dir_.empty()) {
    absl::MutexLock lock(&mu_);
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) return NotFound(id);
    return it->second.glossary;
  }
  // Its file decides (another server sharing the directory may have written or removed it):
  // one stat per call, and a read only when the file is not the version held.
  if (!IsId(id)) return NotFound(id);
  const std::string path = PathOf(id);
  const std::optional<FileStamp> stamp = StampOf(path);
  {
    absl::MutexLock lock(&mu_);
    const auto it = by_id_.find(id);
    if (!stamp) {
      if (it != by_id_.end()) by_id_.erase(it);
      return NotFound(id);
    }
    if (it != by_id_.end() && it->second.stamp == *stamp) return it->second.glossary;
  }
  auto g = ReadGlossaryFile(path, id);
  if (!g.ok()) {
    if (!StampOf(path)) return NotFound(id);  // removed while it was read
    return absl::InternalError(
        absl::StrCat("glossary file ", path, " cannot be read: ", g.status().message()));
  }
  Publish(*g, *stamp);
  return *g;
}

absl::StatusOr<std::shared_ptr<const Glossary>> GlossaryStore::Update(
    const std::string& id, std::optional<std::string> name,
    std::vector<GlossaryDictionary> dictionaries, DictionaryUpdate mode) {
  absl::MutexLock write(&write_mu_);
  auto current = Get(id);
  if (!current.ok()) return current.status();
  auto g = std::make_shared<Glossary>(**current);
  if (name) g->name = *std::move(name);
  // The new dictionaries checked on their own first, so that errors name their own indexes.
  if (!dictionaries.empty()) {
    if (auto s = Check(g->name, &dictionaries); !s.ok()) return s;
  }
  for (GlossaryDictionary& d : dictionaries) {
    auto it = std::find_if(g->dictionaries.begin(), g->dictionaries.end(),
                           [&](const GlossaryDictionary& x) { return SamePair(x, d); });
    if (it == g->dictionaries.end()) {
      g->dictionaries.push_back(std::move(d));
    } else if (mode == DictionaryUpdate::kReplace) {
      *it = std::move(d);
    } else {
      it->entries = Merged(it->entries, d.entries);
      it->table = nullptr;  // compiled again below
    }
  }
  if (auto s = Check(g->name, &g->dictionaries); !s.ok()) return s;
  Compile(&g->dictionaries);  // the new and changed dictionaries only
  auto stamp = Persist(g->id, g.get());
  if (!stamp.ok()) return stamp.status();
  Publish(g, *stamp);
  return g;
}

absl::Status GlossaryStore::DeleteDictionary(const std::string& id, const std::string& source,
                                             const std::string& target) {
  absl::MutexLock write(&write_mu_);
  auto current = Get(id);
  if (!current.ok()) return current.status();
  const GlossaryDictionary* gone = (*current)->Find(source, target);
  if (gone == nullptr) return absl::NotFoundError((*current)->MissingPair(source, target));
  auto g = std::make_shared<Glossary>(**current);
  g->dictionaries.erase(g->dictionaries.begin() + (gone - (*current)->dictionaries.data()));
  if (g->dictionaries.empty()) {
    if (auto st = Persist(id, nullptr); !st.ok()) return st.status();
    Forget(id);
    return absl::OkStatus();
  }
  auto stamp = Persist(id, g.get());
  if (!stamp.ok()) return stamp.status();
  Publish(g, *stamp);
  return absl::OkStatus();
}

absl::Status GlossaryStore::Delete(const std::string& id) {
  absl::MutexLock write(&write_mu_);
  if (auto current = Get(id); !current.ok()) return current.status();
  if (auto s = Persist(id, nullptr); !s.ok()) return s.status();
  Forget(id);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const text::TermTable>> GlossaryStore::TermsFor(
    const std::string& id, const std::string& source, const std::string& target) const {
  auto g = Get(id);
  if (!g.ok()) return g.status();
  const GlossaryDictionary* d = (*g)->Find(source, target);
  if (d == nullptr) return absl::InvalidArgumentError((*g)->MissingPair(source, target));
  return d->table;
}

}  // namespace transerve
