// A sentence's translation does not depend on what else is in its batch: the same ids and the
// same scores, bit for bit (one product kernel for every row count, attention row by row,
// activations quantized row by row), in every CPU dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <tuple>

#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

class BatchInvarianceTest : public ::testing::TestWithParam<std::tuple<int, std::string>> {
 protected:
  int beam() const { return std::get<0>(GetParam()); }
  const std::string& dtype() const { return std::get<1>(GetParam()); }
  static std::vector<std::vector<int32_t>> SourcesOf(const nlohmann::json& expected) {
    std::vector<std::vector<int32_t>> sources;
    for (const auto& c : expected["cases"]) {
      sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
    }
    return sources;
  }
  DecodingOptions OptionsOf(const nlohmann::json& expected) const {
    DecodingOptions options;
    options.beam_size = beam();
    options.max_length = expected["max_length"].get<int>();
    return options;
  }
};

TEST_P(BatchInvarianceTest, OutputIdenticalAloneAndInsideBatchesOfDifferentCompositions) {
  const std::string name = testing::kFixtureNames[0];
  const nlohmann::json expected = testing::LoadExpected(name);
  auto translator = Translator::Create(
      {.model_dir = testing::FixtureModelDir(name), .device = "cpu", .dtype = dtype()});
  ASSERT_TRUE(translator.ok()) << translator.status();
  const std::vector<std::vector<int32_t>> sources = SourcesOf(expected);
  const DecodingOptions options = OptionsOf(expected);

  std::vector<Hypothesis> alone;
  for (const auto& s : sources) {
    auto r = (*translator)->TranslateIds(std::span(&s, 1), options);
    ASSERT_TRUE(r.ok()) << r.status();
    alone.push_back((*r)[0].hypotheses[0]);
  }

  // Compositions: everything at once, shuffled, and shuffled batches of 7.
  std::mt19937 rng(beam());
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<std::vector<size_t>> compositions{order};
  std::shuffle(order.begin(), order.end(), rng);
  compositions.push_back(order);
  for (size_t begin = 0; begin < order.size(); begin += 7) {
    compositions.emplace_back(order.begin() + begin,
                              order.begin() + std::min(order.size(), begin + 7));
  }
  for (const auto& batch : compositions) {
    std::vector<std::vector<int32_t>> batch_sources;
    for (size_t i : batch) batch_sources.push_back(sources[i]);
    auto r = (*translator)->TranslateIds(batch_sources, options);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t k = 0; k < batch.size(); ++k) {
      const Hypothesis& h = (*r)[k].hypotheses[0];
      EXPECT_EQ(h.ids, alone[batch[k]].ids) << "sentence " << batch[k];
      EXPECT_EQ(h.score, alone[batch[k]].score) << "sentence " << batch[k];
    }
  }
}

// Replicas (Translator::CreateReplica) share the weights and step side by side on their own
// threads: each still gives every sentence the bits it gets alone.
TEST_P(BatchInvarianceTest, ReplicasOnTheirOwnThreadsShareTheWeightsAndKeepTheBits) {
  const std::string name = testing::kFixtureNames[0];
  const nlohmann::json expected = testing::LoadExpected(name);
  auto translator = Translator::Create(
      {.model_dir = testing::FixtureModelDir(name), .device = "cpu", .dtype = dtype()});
  ASSERT_TRUE(translator.ok()) << translator.status();
  auto replica = (*translator)->CreateReplica();
  ASSERT_TRUE(replica.ok()) << replica.status();
  EXPECT_EQ(&(*replica)->model(), &(*translator)->model());
  EXPECT_EQ((*replica)->dtype(), (*translator)->dtype());
  EXPECT_EQ((*replica)->KvCapacityBlocks(), (*translator)->KvCapacityBlocks());
  const std::vector<std::vector<int32_t>> sources = SourcesOf(expected);
  const DecodingOptions options = OptionsOf(expected);
  auto alone = (*translator)->TranslateIds(sources, options);
  ASSERT_TRUE(alone.ok()) << alone.status();

  // Random halves, each replica translating its own at the same time, a few rounds.
  std::mt19937 rng(17 + beam());
  for (int round = 0; round < 3; ++round) {
    std::vector<size_t> order(sources.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t half = std::uniform_int_distribution<size_t>(1, order.size() - 1)(rng);
    const std::vector<size_t> parts[2] = {{order.begin(), order.begin() + half},
                                          {order.begin() + half, order.end()}};
    Translator* translators[2] = {translator->get(), replica->get()};
    absl::StatusOr<std::vector<SearchResult>> results[2];
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) {
      threads.emplace_back([&, i] {
        std::vector<std::vector<int32_t>> mine;
        for (size_t k : parts[i]) mine.push_back(sources[k]);
        results[i] = translators[i]->TranslateIds(mine, options);
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(results[i].ok()) << results[i].status();
      for (size_t k = 0; k < parts[i].size(); ++k) {
        const Hypothesis& h = (*results[i])[k].hypotheses[0];
        const Hypothesis& a = (*alone)[parts[i][k]].hypotheses[0];
        EXPECT_EQ(h.ids, a.ids) << "replica " << i << ", sentence " << parts[i][k];
        EXPECT_EQ(h.score, a.score) << "replica " << i << ", sentence " << parts[i][k];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GreedyAndBeam, BatchInvarianceTest,
                         ::testing::Combine(::testing::Values(1, 4),
                                            ::testing::Values(std::string("float32"),
                                                              std::string("bfloat16"),
                                                              std::string("int8"))),
                         [](const auto& info) {
                           return (std::get<0>(info.param) == 1 ? std::string("Greedy_")
                                                                : std::string("Beam4_")) +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace transerve
