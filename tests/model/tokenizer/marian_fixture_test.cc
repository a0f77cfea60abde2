// Cross-check against the golden fixtures made by tools/reference (Python: sentencepiece 0.1.97 and
// a MarianTokenizer v4 re-statement): for every case in tests/fixtures/*/expected.json, our
// Encode must give its source_ids and our Decode its greedy/beam texts. Skipped when no fixture
// exists yet.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "model/tokenizer/marian_tokenizer.h"
#include "tests/testing/paths.h"

namespace transerve::testing {
namespace {

std::vector<std::filesystem::path> FixtureDirs() {
  std::vector<std::filesystem::path> dirs;
  const std::filesystem::path root = std::filesystem::path(SourceDir()) / "tests/fixtures";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (std::filesystem::exists(entry.path() / "expected.json") &&
        std::filesystem::exists(entry.path() / "model" / "vocab.json")) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

TEST(MarianFixtures, EncodeAndDecodeMatchTheReference) {
  const auto dirs = FixtureDirs();
  if (dirs.empty()) GTEST_SKIP() << "no tests/fixtures/*/expected.json yet";
  for (const auto& dir : dirs) {
    SCOPED_TRACE(dir.string());
    std::ifstream in(dir / "expected.json");
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json expected = nlohmann::json::parse(ss.str(), nullptr, false);
    ASSERT_FALSE(expected.is_discarded());
    ASSERT_TRUE(expected.contains("cases"));
    auto tok = MarianTokenizer::Load((dir / "model").string());
    ASSERT_TRUE(tok.ok()) << tok.status();
    int encoded = 0;
    int decoded = 0;
    for (const auto& c : expected["cases"]) {
      if (!c.contains("text") || !c["text"].is_string()) continue;
      const std::string text = c["text"].get<std::string>();
      if (c.contains("source_ids")) {
        auto ids = (*tok)->Encode(text);
        ASSERT_TRUE(ids.ok()) << ids.status();
        EXPECT_EQ(*ids, c["source_ids"].get<std::vector<int32_t>>()) << "[" << text << "]";
        ++encoded;
      }
      for (const char* search : {"greedy", "beam"}) {
        if (!c.contains(search) || !c[search].contains("ids") || !c[search].contains("text")) {
          continue;
        }
        const auto ids = c[search]["ids"].get<std::vector<int32_t>>();
        EXPECT_EQ((*tok)->Decode(ids), c[search]["text"].get<std::string>())
            << search << " output of [" << text << "]";
        ++decoded;
      }
    }
    EXPECT_GT(encoded, 0);
    std::cout << "[          ] " << dir.filename().string() << ": " << encoded
              << " source texts encoded, " << decoded << " outputs decoded\n";
  }
}

}  // namespace
}  // namespace transerve::testing
