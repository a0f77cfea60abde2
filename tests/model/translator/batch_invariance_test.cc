// A sentence's translation does not depend on what else is in its batch: the same ids and the
// same scores, bit for bit (one product kernel for every row count, attention row by row,
// activations quantized row by row), in every CPU dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <tuple>

#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

class BatchInvarianceTest : public ::testing::TestWithParam<std::tuple<int, std::string>> {
 protected:
  int beam() const { return std::get<0>(GetParam()); }
  const std::string& dtype() const { return std::get<1>(GetParam()); }
};

TEST_P(BatchInvarianceTest, OutputIdenticalAloneAndInsideBatchesOfDifferentCompositions) {
  const std::string name = testing::kFixtureNames[0];
  const nlohmann::json expected = testing::LoadExpected(name);
  auto translator = Translator::Create(
      {.model_dir = testing::FixtureModelDir(name), .device = "cpu", .dtype = dtype()});
  ASSERT_TRUE(translator.ok()) << translator.status();
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : expected["cases"]) {
    sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
  }
  DecodingOptions options;
  options.beam_size = beam();
  options.max_length = expected["max_length"].get<int>();

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
