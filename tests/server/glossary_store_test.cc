// The glossary store on its own: checks, updates, files that survive a restart (and a crash's
// leftovers), and many threads at once.
#include "server/glossaries/glossary_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

std::string RandomWord(std::mt19937& rng) {
  static const char* kSyllables[] = {"ka", "lo", "mi", "ste", "ran", "vu", "ße", "é", "to", "bar"};
  std::string w;
  for (int n = std::uniform_int_distribution<int>(1, 4)(rng); n > 0; --n) {
    w += kSyllables[std::uniform_int_distribution<int>(0, 9)(rng)];
  }
  return w;
}

// `n` entries with distinct random sources.
std::vector<text::Term> RandomEntries(int n, std::mt19937& rng) {
  std::set<std::string> seen;
  std::vector<text::Term> out;
  while (static_cast<int>(out.size()) < n) {
    std::string source = RandomWord(rng);
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) source += " " + RandomWord(rng);
    if (!seen.insert(source).second) continue;
    out.push_back({source, RandomWord(rng)});
  }
  return out;
}

GlossaryDictionary Dictionary(const std::string& source, const std::string& target,
                              std::vector<text::Term> entries) {
  GlossaryDictionary d;
  d.source_language = source;
  d.target_language = target;
  d.entries = std::move(entries);
  return d;
}

class GlossaryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("glossary_store_test_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<GlossaryStore> Open(GlossaryLimits limits = {}) {
    auto store = GlossaryStore::Open(dir_.string(), limits);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  fs::path dir_;
  std::mt19937 rng_{42};
};

TEST_F(GlossaryStoreTest, CreatedGlossariesAreListedFetchedAndTheirTermsMatch) {
  auto store = Open();
  const auto entries = RandomEntries(50, rng_);
  auto g = store->Create("products", {Dictionary("EN", "deu", entries),
                                      Dictionary("en", "fr", RandomEntries(3, rng_))});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->id.size(), 36u);
  ASSERT_EQ((*g)->dictionaries.size(), 2u);
  EXPECT_EQ((*g)->dictionaries[0].source_language, "en");  // canonical, sorted by pair
  EXPECT_EQ((*g)->dictionaries[0].target_language, "de");
  EXPECT_EQ((*g)->entry_count(), 53u);
  auto table = store->TermsFor((*g)->id, "en-GB", "de");
  ASSERT_TRUE(table.ok()) << table.status();
  for (const text::Term& t : entries) {
    const std::string text = "x " + t.source + " y";
    const text::TermTable::Match m = (*table)->MatchAt(text, 2);
    EXPECT_EQ(m.length, t.source.size()) << t.source;
    if (m.target != nullptr) EXPECT_EQ(*m.target, t.target);
  }
  EXPECT_EQ(store->TermsFor((*g)->id, "en", "it").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->TermsFor("00000000-0000-4000-8000-000000000000", "en", "de").status().code(),
            absl::StatusCode::kNotFound);
  auto second = store->Create("second", {Dictionary("de", "en", RandomEntries(2, rng_))});
  ASSERT_TRUE(second.ok());
  const auto list = store->List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]->id, (*g)->id);  // oldest first
  EXPECT_EQ((*store->Get((*second)->id))->name, "second");
}

TEST_F(GlossaryStoreTest, BadInputIsRefusedWithWhereAndWhy) {
  auto store = Open();
  auto expect = [&](std::string name, std::vector<GlossaryDictionary> d, absl::StatusCode code,
                    const std::string& says) {
    const auto g = store->Create(std::move(name), std::move(d));
    ASSERT_FALSE(g.ok()) << says;
    EXPECT_EQ(g.status().code(), code) << g.status();
    EXPECT_NE(g.status().message().find(says), std::string::npos) << g.status();
  };
  const auto ok = RandomEntries(2, rng_);
  expect("", {Dictionary("en", "de", ok)}, absl::StatusCode::kInvalidArgument, "name");
  expect("a\nb", {Dictionary("en", "de", ok)}, absl::StatusCode::kInvalidArgument, "name");
  expect("g", {}, absl::StatusCode::kInvalidArgument, "at least one dictionary");
  expect("g", {Dictionary("english", "de", ok)}, absl::StatusCode::kInvalidArgument,
         "dictionaries[0]");
  expect("g", {Dictionary("en", "en-US", ok)}, absl::StatusCode::kInvalidArgument, "both 'en'");
  expect("g", {Dictionary("en", "de", ok), Dictionary("eng", "deu", ok)},
         absl::StatusCode::kInvalidArgument, "dictionaries[1]: dictionaries[0] is also en to de");
  expect("g", {Dictionary("en", "de", {})}, absl::StatusCode::kInvalidArgument, "no entries");
  expect("g", {Dictionary("en", "de", {{"a", "b"}, {" c", "d"}})},
         absl::StatusCode::kInvalidArgument, "entries[1]: the source term starts or ends with");
  expect("g", {Dictionary("en", "de", {{"a", "b\tc"}})}, absl::StatusCode::kInvalidArgument,
         "entries[0]: the target term holds a control character");
  expect("g", {Dictionary("en", "de", {{"a", "b"}, {"c", ""}})}, absl::StatusCode::kInvalidArgument,
         "entries[1]: the target term is empty");
  expect("g", {Dictionary("en", "de", {{"a", "b"}, {"a", "c"}})},
         absl::StatusCode::kInvalidArgument, "entries[1]: its source term is also entries[0]'s");
  expect("g", {Dictionary("en", "de", {{"\xff", "b"}})}, absl::StatusCode::kInvalidArgument,
         "not valid UTF-8");
  EXPECT_TRUE(store->List().empty());
}

TEST_F(GlossaryStoreTest, LimitsAreResourceExhausted) {
  GlossaryLimits limits;
  limits.max_glossaries = 2;
  limits.max_glossary_bytes = 100;
  auto store = Open(limits);
  EXPECT_EQ(
      store->Create("big", {Dictionary("en", "de", {{std::string(60, 'a'), std::string(60, 'b')}})})
          .status()
          .code(),
      absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(store->Create("a", {Dictionary("en", "de", RandomEntries(2, rng_))}).ok());
  ASSERT_TRUE(store->Create("b", {Dictionary("en", "de", RandomEntries(2, rng_))}).ok());
  EXPECT_EQ(store->Create("c", {Dictionary("en", "de", RandomEntries(2, rng_))}).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(GlossaryStoreTest, UpdatesMergeReplaceAddRenameAndDelete) {
  auto store = Open();
  auto g = store->Create("g", {Dictionary("en", "de", {{"disk", "Platte"}, {"file", "Datei"}})});
  ASSERT_TRUE(g.ok());
  const std::string id = (*g)->id;
  // Merge: one entry replaced in place, one added; a new pair added; the name kept.
  auto u = store->Update(id, std::nullopt,
                         {Dictionary("en", "de", {{"disk", "Festplatte"}, {"mouse", "Maus"}}),
                          Dictionary("en", "fr", {{"disk", "disque"}})},
                         DictionaryUpdate::kMerge);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ((*u)->name, "g");
  const GlossaryDictionary* de = (*u)->Find("en", "de");
  ASSERT_NE(de, nullptr);
  ASSERT_EQ(de->entries.size(), 3u);
  EXPECT_EQ(de->entries[0].target, "Festplatte");
  EXPECT_EQ(de->entries[2].source, "mouse");
  EXPECT_NE((*u)->Find("en", "fr"), nullptr);
  // Replace, and rename.
  u = store->Update(id, "renamed", {Dictionary("en", "de", {{"key", "Taste"}})},
                    DictionaryUpdate::kReplace);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ((*u)->name, "renamed");
  ASSERT_EQ((*u)->Find("en", "de")->entries.size(), 1u);
  // The old version a reader holds is unchanged.
  EXPECT_EQ((*g)->dictionaries[0].entries.size(), 2u);
  // A bad update changes nothing.
  EXPECT_FALSE(store->Update(id, "", {}, DictionaryUpdate::kMerge).ok());
  EXPECT_EQ((*store->Get(id))->name, "renamed");
  EXPECT_EQ(store->Update("nope", "x", {}, DictionaryUpdate::kMerge).status().code(),
            absl::StatusCode::kNotFound);
  // Deleting the dictionaries one by one removes the glossary with its last.
  EXPECT_EQ(store->DeleteDictionary(id, "en", "it").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store->DeleteDictionary(id, "EN", "fra").ok());
  ASSERT_TRUE(store->Get(id).ok());
  ASSERT_TRUE(store->DeleteDictionary(id, "en", "de").ok());
  EXPECT_EQ(store->Get(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Delete(id).code(), absl::StatusCode::kNotFound);
}

TEST_F(GlossaryStoreTest, GlossariesSurviveARestartAndACrashesLeftovers) {
  std::string kept, deleted;
  std::vector<text::Term> entries = RandomEntries(200, rng_);
  {
    auto store = Open();
    auto a = store->Create("kept", {Dictionary("en", "de", entries)});
    auto b = store->Create("deleted", {Dictionary("en", "de", RandomEntries(2, rng_))});
    ASSERT_TRUE(a.ok() && b.ok());
    kept = (*a)->id;
    deleted = (*b)->id;
    ASSERT_TRUE(store->Delete(deleted).ok());
    ASSERT_TRUE(store->Update(kept, "kept and renamed", {}, DictionaryUpdate::kMerge).ok());
  }
  // What a crash mid-write leaves: a temporary file beside the whole one; and a file damaged
  // by something else.
  std::ofstream(dir_ / (kept + ".json.tmp-0123abcd")) << "{\"glossary_id\": \"trunc";
  const std::string damaged = "11111111-2222-4333-8444-555555555555";
  std::ofstream(dir_ / (damaged + ".json")) << "{\"glossary_id\": \"" << damaged << "\", \"na";
  auto store = Open();
  const auto list = store->List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]->id, kept);
  EXPECT_EQ(list[0]->name, "kept and renamed");
  ASSERT_EQ(list[0]->dictionaries.size(), 1u);
  ASSERT_EQ(list[0]->dictionaries[0].entries.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(list[0]->dictionaries[0].entries[i].source, entries[i].source);
    EXPECT_EQ(list[0]->dictionaries[0].entries[i].target, entries[i].target);
  }
  EXPECT_TRUE(store->TermsFor(kept, "en", "de").ok()) << store->TermsFor(kept, "en", "de").status();
  EXPECT_FALSE(fs::exists(dir_ / (kept + ".json.tmp-0123abcd")));
  EXPECT_FALSE(fs::exists(dir_ / (damaged + ".json")));
  EXPECT_TRUE(fs::exists(dir_ / (damaged + ".json.unreadable")));
  EXPECT_FALSE(fs::exists(dir_ / (deleted + ".json")));
}

// Two servers on one volume (replicas behind a balancer): what one writes, the other serves.
TEST_F(GlossaryStoreTest, TwoStoresOnOneDirectorySeeEachOthersWrites) {
  auto a = Open();
  auto b = Open();
  auto g = a->Create("shared", {Dictionary("en", "de", {{"disk", "Platte"}})});
  ASSERT_TRUE(g.ok());
  const std::string id = (*g)->id;
  auto seen = b->TermsFor(id, "en", "de");
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*(*seen)->MatchAt("a disk", 2).target, "Platte");
  ASSERT_EQ(b->List().size(), 1u);
  // Updated by b, seen by a.
  ASSERT_TRUE(b->Update(id, std::nullopt, {Dictionary("en", "de", {{"disk", "Festplatte"}})},
                        DictionaryUpdate::kReplace)
                  .ok());
  seen = a->TermsFor(id, "en", "de");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(*(*seen)->MatchAt("a disk", 2).target, "Festplatte");
  // Deleted by a: gone for b too.
  ASSERT_TRUE(a->Delete(id).ok());
  EXPECT_EQ(b->Get(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(b->List().empty());
  // An id is never a path.
  EXPECT_EQ(b->Get("../../etc/passwd").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GlossaryStoreTest, MemoryOnlyStoreWritesNothing) {
  auto store = GlossaryStore::Open("");
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE((*store)->durable());
  ASSERT_TRUE((*store)->Create("g", {Dictionary("en", "de", RandomEntries(3, rng_))}).ok());
  EXPECT_EQ((*store)->List().size(), 1u);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(GlossaryStoreTest, NotADirectoryIsAnError) {
  std::ofstream(dir_.string()) << "x";
  EXPECT_FALSE(GlossaryStore::Open(dir_.string()).ok());
  fs::remove(dir_);
}

// Creates, updates and deletes on several threads while others look terms up: every lookup
// answers either the terms or NOT_FOUND, and the files on disk are what the store holds.
TEST_F(GlossaryStoreTest, ManyThreadsAtOnce) {
  auto store = Open();
  std::atomic<bool> stop{false};
  std::vector<std::string> ids(4);
  for (auto& id : ids) {
    id = (*store->Create("base", {Dictionary("en", "de", RandomEntries(20, rng_))}))->id;
  }
  std::atomic<int> lookups{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937 rng(r);
      while (!stop.load()) {
        const auto t = store->TermsFor(ids[rng() % ids.size()], "en", "de");
        EXPECT_TRUE(t.ok() || t.status().code() == absl::StatusCode::kNotFound) << t.status();
        for (const auto& g : store->List()) EXPECT_FALSE(g->dictionaries.empty());
        ++lookups;
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 rng(100 + w);
      for (int i = 0; i < 20; ++i) {
        auto g = store->Create(absl::StrCat("w", w, "-", i),
                               {Dictionary("en", "de", RandomEntries(10, rng))});
        ASSERT_TRUE(g.ok()) << g.status();
        ASSERT_TRUE(store
                        ->Update((*g)->id, std::nullopt,
                                 {Dictionary("en", "de", RandomEntries(5, rng))},
                                 DictionaryUpdate::kMerge)
                        .ok());
        if (i % 2 == 0) ASSERT_TRUE(store->Delete((*g)->id).ok());
      }
      (void)store->Delete(ids[w]);
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(lookups.load(), 0);
  const auto list = store->List();
  EXPECT_EQ(list.size(), 1u + 3u * 10u);
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir_)) on_disk.insert(e.path().stem().string());
  std::set<std::string> held;
  for (const auto& g : list) held.insert(g->id);
  EXPECT_EQ(on_disk, held);
  auto reopened = Open();
  EXPECT_EQ(reopened->List().size(), list.size());
}

}  // namespace
}  // namespace transerve
