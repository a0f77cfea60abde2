// The server's glossaries: named sets of term pairs, one dictionary per language pair, each
// compiled once into the text layer's TermTable for the requests that use it. Kept in a
// directory, one JSON file per glossary written to a temporary file, flushed, then renamed over
// the old one, so a crash leaves the old or the new file and never half of one; or in memory
// only. The directory is the truth: servers sharing it (replicas behind a balancer, on one
// volume) see each other's glossaries, each checking a glossary's file once per use and reading
// it again when it changed. Knows nothing of gRPC or HTTP: the Glossaries service and DeepL's
// routes call it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "text/term_table.h"

namespace transerve {

struct GlossaryDictionary {
  std::string source_language;  // canonical (text::CanonicalLanguage)
  std::string target_language;
  std::vector<text::Term> entries;               // in the order given
  std::shared_ptr<const text::TermTable> table;  // compiled from `entries` once, when stored
};

struct Glossary {
  std::string id;  // a random UUID, as DeepL's
  std::string name;
  absl::Time created;
  std::vector<GlossaryDictionary> dictionaries;  // sorted by pair

  // Its dictionary for the pair (any form of the codes: "EN-GB", "deu"), or null.
  const GlossaryDictionary* Find(const std::string& source, const std::string& target) const;
  // Why Find found nothing: the message names the pairs it has.
  std::string MissingPair(const std::string& source, const std::string& target) const;
  size_t entry_count() const;
};

struct GlossaryLimits {
  int max_glossaries = 1000;
  // Bytes of terms, sources and targets together, per glossary (DeepL's limit is 10 MB).
  int64_t max_glossary_bytes = 10 << 20;
  int max_name_chars = 1024;
};

// One version of a glossary's file (a rewrite renames a new file in: a new inode).
struct FileStamp {
  uint64_t inode = 0;
  int64_t mtime_ns = 0;
  int64_t size = 0;
  bool operator==(const FileStamp&) const = default;
};

// How an update treats a dictionary for a pair the glossary already has.
enum class DictionaryUpdate { kMerge, kReplace };

class GlossaryStore {
 public:
  // `dir` "" keeps glossaries in memory only. Otherwise the directory is made if missing, and
  // every glossary in it read; leftover temporary files are removed, and a file that cannot be
  // read is renamed "<file>.unreadable" (and logged) so that the rest still serve.
  static absl::StatusOr<std::unique_ptr<GlossaryStore>> Open(const std::string& dir,
                                                             GlossaryLimits limits = {});

  // INVALID_ARGUMENT for a bad name, language or entry (which one and why, in
  // `dictionaries`' terms: "dictionaries[0].entries[3]: ..."), two dictionaries for one pair;
  // RESOURCE_EXHAUSTED beyond the limits; INTERNAL when the file cannot be written.
  absl::StatusOr<std::shared_ptr<const Glossary>> Create(
      std::string name, std::vector<GlossaryDictionary> dictionaries);
  // Oldest first (with a directory: every glossary file in it).
  std::vector<std::shared_ptr<const Glossary>> List() const;
  // NOT_FOUND for an unknown id (with a directory: no such file); INTERNAL for a file that
  // cannot be read.
  absl::StatusOr<std::shared_ptr<const Glossary>> Get(const std::string& id) const;
  // NOT_FOUND for an unknown id; otherwise as Create.
  absl::StatusOr<std::shared_ptr<const Glossary>> Update(
      const std::string& id, std::optional<std::string> name,
      std::vector<GlossaryDictionary> dictionaries, DictionaryUpdate mode);
  // Removes one dictionary (languages as given: canonicalised here); the glossary too when it
  // was its last. NOT_FOUND for an unknown id or pair.
  absl::Status DeleteDictionary(const std::string& id, const std::string& source,
                                const std::string& target);
  absl::Status Delete(const std::string& id);

  // The compiled terms of glossary `id` for the pair (languages as given). NOT_FOUND for an
  // unknown id, INVALID_ARGUMENT when it has no dictionary for the pair.
  absl::StatusOr<std::shared_ptr<const text::TermTable>> TermsFor(const std::string& id,
                                                                  const std::string& source,
                                                                  const std::string& target) const;

  bool durable() const { return !dir_.empty(); }

 private:
  GlossaryStore(std::string dir, GlossaryLimits limits) : dir_(std::move(dir)), limits_(limits) {}
  // Writes (or, with null, removes) the glossary's file; the written file's stamp. Called with
  // write_mu_ held.
  absl::StatusOr<FileStamp> Persist(const std::string& id, const Glossary* glossary);
  // Validates and canonicalises (the tables are compiled after).
  absl::Status Check(const std::string& name, std::vector<GlossaryDictionary>* dictionaries) const;
  std::string PathOf(const std::string& id) const;
  // A glossary file, checked (its id must be `id`) and compiled.
  absl::StatusOr<std::shared_ptr<const Glossary>> ReadGlossaryFile(
      const std::filesystem::path& path, const std::string& id) const;
  void Publish(std::shared_ptr<const Glossary> glossary, FileStamp stamp) const;
  void Forget(const std::string& id) const;

  const std::string dir_;
  const GlossaryLimits limits_;
  // Writers (file first, then the map) one at a time, so that two updates of one glossary
  // cannot lose one; readers only take mu_, never waiting on a disk.
  absl::Mutex write_mu_;
  mutable absl::Mutex mu_;
  struct Held {
    std::shared_ptr<const Glossary> glossary;
    FileStamp stamp;  // of the file it was read from or written to (none in memory)
  };
  // A cache of the files with a directory (Get and List refresh it); everything without one.
  mutable std::map<std::string, Held> by_id_ ABSL_GUARDED_BY(mu_);
};

}  // namespace transerve
