// One CUDA stream per model replica: device blocks stay with the stream they were allocated
// for, and each translator's work goes to its own stream. Skips with the probe's reason where
// there is no usable GPU; the per-stream work counts need the host emulator (emulator/).
#include <gtest/gtest.h>

#include <vector>

#include "model/ops/cuda_plugin.h"
#include "model/translator/translator.h"
#include "tests/model/cuda/emulator_hooks.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

TEST(CudaStreams, AFreedBlockIsReusedOnlyOnItsStreamUntilThatStreamIsDestroyed) {
  const TranserveCudaApi* api = CudaApi();
  if (api == nullptr) GTEST_SKIP() << ProbeCuda().detail;
  // A size no other test uses, so no earlier block of its class is lying free.
  const size_t bytes = (size_t{7} << 20) + 123;
  TranserveCudaStream* first = api->create_stream();
  TranserveCudaStream* second = api->create_stream();
  ASSERT_NE(first, nullptr) << api->last_error();
  ASSERT_NE(second, nullptr) << api->last_error();
  ASSERT_NE(first, second);

  void* block = api->allocate(first, bytes);
  ASSERT_NE(block, nullptr);
  api->free(block);
  // The first stream may still have work queued that reads the block.
  void* other = api->allocate(second, bytes);
  EXPECT_NE(other, block);
  void* again = api->allocate(first, bytes);
  EXPECT_EQ(again, block);  // its own stream's order makes the reuse safe
  api->free(again);
  api->destroy_stream(first);  // waits for the stream: its blocks are free for any
  void* inherited = api->allocate(second, bytes);
  EXPECT_EQ(inherited, block);
  api->free(other);
  api->free(inherited);
  api->destroy_stream(second);
}

// How many operations each stream has been given (emulator only; empty on a real GPU).
std::vector<uint64_t> StreamWork() { return testing::DeviceCounters().stream_work(); }

// The streams whose count grew from `before` to `after`.
std::vector<size_t> BusyStreams(const std::vector<uint64_t>& before,
                                const std::vector<uint64_t>& after) {
  std::vector<size_t> busy;
  for (size_t i = 0; i < after.size(); ++i) {
    if (after[i] > (i < before.size() ? before[i] : 0)) busy.push_back(i);
  }
  return busy;
}

TEST(CudaStreams, EachTranslatorQueuesAllItsWorkOnItsOwnStream) {
  if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
  if (StreamWork().empty()) {
    GTEST_SKIP() << "counting work per stream needs the CUDA emulator (tests/model/cuda/emulator)";
  }
  const std::string fixture = testing::kFixtureNames[0];
  const nlohmann::json expected = testing::LoadExpected(fixture);
  std::vector<std::vector<int32_t>> sources;
  for (int i = 0; i < 3; ++i) {
    sources.push_back(expected["cases"][i]["source_ids"].get<std::vector<int32_t>>());
  }
  DecodingOptions options;
  options.max_length = expected["max_length"].get<int>();
  options.beam_size = 2;  // forks copy KV blocks on the device too
  options.return_alignment = true;

  // Everything a translator does on the device, from loading to reading its logits back.
  auto run = [&](std::unique_ptr<Translator>* translator) {
    auto t = Translator::Create(
        {.model_dir = testing::FixtureModelDir(fixture), .device = "cuda", .dtype = "float16"});
    ASSERT_TRUE(t.ok()) << t.status();
    *translator = *std::move(t);
    auto results = (*translator)->TranslateIds(sources, options);
    ASSERT_TRUE(results.ok()) << results.status();
    EXPECT_GT((*translator)->CopyLastLogits().numel(), 0);
  };
  // Choosing the device runs the self-test kernel, once per process: not a replica's work.
  std::string self_test;
  ASSERT_TRUE(CudaSelfTest(&self_test)) << self_test;
  std::unique_ptr<Translator> first, second;
  const std::vector<uint64_t> start = StreamWork();
  ASSERT_NO_FATAL_FAILURE(run(&first));
  const std::vector<uint64_t> after_first = StreamWork();
  ASSERT_NO_FATAL_FAILURE(run(&second));
  const std::vector<uint64_t> after_second = StreamWork();

  // One stream each (so none of it went to a default stream), and not the same one.
  const std::vector<size_t> busy_first = BusyStreams(start, after_first);
  const std::vector<size_t> busy_second = BusyStreams(after_first, after_second);
  ASSERT_EQ(busy_first.size(), 1u) << "the first translator's work went to several streams";
  ASSERT_EQ(busy_second.size(), 1u) << "the second translator's work went to several streams";
  EXPECT_NE(busy_first[0], busy_second[0]);
  EXPECT_NE(busy_first[0], 0u) << "work on the legacy default stream";
  EXPECT_NE(busy_second[0], 0u) << "work on the legacy default stream";
}

}  // namespace
}  // namespace transerve
