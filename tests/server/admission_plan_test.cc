// The scheduler's admission and preemption rules, one test each, on plain numbers (no model).
#include "server/admission_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace transerve {
namespace {

constexpr int kCases = 200;

int64_t RandomInt(std::mt19937& rng, int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(rng);
}

// A scheduler's view between two steps, owning what AdmissionState points at.
struct Scene {
  std::vector<QueuedSentence> queue = {};
  std::vector<int64_t> live_headroom = {};
  int64_t blocks_in_use = 0;
  int64_t capacity_blocks = 0;
  int64_t steps = 0;
  bool kv_pressure = false;
  AdmissionPolicy policy;

  AdmissionPlan Plan() const {
    return PlanAdmission({.queue = queue,
                          .live_headroom_blocks = live_headroom,
                          .blocks_in_use = blocks_in_use,
                          .capacity_blocks = capacity_blocks,
                          .steps = steps,
                          .kv_pressure = kv_pressure},
                         policy);
  }
};

// `n` queued sentences of random length and headroom, all queued at step 0.
std::vector<QueuedSentence> RandomQueue(std::mt19937& rng, int64_t n, int64_t max_tokens = 64,
                                        int64_t max_headroom = 24) {
  std::vector<QueuedSentence> queue;
  for (int64_t i = 0; i < n; ++i) {
    queue.push_back({.source_tokens = RandomInt(rng, 1, max_tokens),
                     .headroom_blocks = RandomInt(rng, 1, max_headroom)});
  }
  return queue;
}

std::vector<int64_t> RandomLive(std::mt19937& rng, int64_t n) {
  std::vector<int64_t> live;
  for (int64_t i = 0; i < n; ++i) live.push_back(RandomInt(rng, 1, 24));
  return live;
}

// No bound but the one under test: room for everything, no group to wait for.
AdmissionPolicy Unbounded() {
  return {.max_batch_sequences = 1 << 20,
          .max_batch_tokens = 1 << 30,
          .admission_group = 1,
          .max_admission_wait_steps = 0};
}

int64_t SumTokens(const std::vector<QueuedSentence>& queue, int64_t n) {
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += queue[i].source_tokens;
  return sum;
}

int64_t SumHeadroom(const std::vector<QueuedSentence>& queue, int64_t n) {
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += queue[i].headroom_blocks;
  return sum;
}

TEST(AdmissionPlan, EmptyQueueAdmitsNothing) {
  std::mt19937 rng(1);
  Scene scene{.live_headroom = RandomLive(rng, 3), .policy = Unbounded()};
  EXPECT_EQ(scene.Plan().admit, 0);
  scene.live_headroom.clear();
  EXPECT_EQ(scene.Plan().admit, 0);
}

// The scheduler hands the plan only the first max_batch_sequences queued sentences, whatever
// the queue's depth: the rest must never change the plan.
TEST(AdmissionPlan, OnlyTheFirstMaxBatchSequencesQueuedSentencesMatter) {
  std::mt19937 rng(20);
  for (int c = 0; c < kCases; ++c) {
    const int max_sequences = static_cast<int>(RandomInt(rng, 1, 12));
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 40)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 0, max_sequences + 2)),
                .blocks_in_use = RandomInt(rng, 0, 200),
                .capacity_blocks = RandomInt(rng, 0, 400),
                .steps = RandomInt(rng, 0, 8),
                .policy = {.mode = c % 5 == 0 ? BatchingMode::kStatic : BatchingMode::kContinuous,
                           .max_batch_sequences = max_sequences,
                           .max_batch_tokens = static_cast<int>(RandomInt(rng, 1, 300)),
                           .admission_group = static_cast<int>(RandomInt(rng, 1, 4)),
                           .max_admission_wait_steps = static_cast<int>(RandomInt(rng, 0, 6))}};
    for (auto& q : scene.queue) q.queued_at_step = RandomInt(rng, 0, scene.steps);
    const int64_t whole = scene.Plan().admit;
    scene.queue.resize(std::min<size_t>(scene.queue.size(), max_sequences));
    EXPECT_EQ(scene.Plan().admit, whole) << "case " << c;
  }
}

TEST(AdmissionPlan, WithNoBoundTheWholeQueueIsAdmitted) {
  std::mt19937 rng(2);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 40)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 0, 5)),
                .blocks_in_use = RandomInt(rng, 0, 1000),
                .policy = Unbounded()};
    const AdmissionPlan plan = scene.Plan();
    EXPECT_EQ(plan.admit, static_cast<int64_t>(scene.queue.size()));
    EXPECT_EQ(plan.stop, AdmissionStop::kNone);
  }
}

TEST(AdmissionPlan, StaticModeAdmitsOnlyWhenNothingIsLive) {
  std::mt19937 rng(3);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 20)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 1, 5)),
                .policy = Unbounded()};
    scene.policy.mode = BatchingMode::kStatic;
    const AdmissionPlan running = scene.Plan();
    EXPECT_EQ(running.admit, 0);
    EXPECT_EQ(running.stop, AdmissionStop::kStaticBatchRunning);
    scene.live_headroom.clear();
    EXPECT_EQ(scene.Plan().admit, static_cast<int64_t>(scene.queue.size()));
  }
}

TEST(AdmissionPlan, AfterAPreemptionNothingIsAdmittedUntilASentenceLeaves) {
  std::mt19937 rng(4);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 20)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 1, 5)),
                .kv_pressure = true,
                .policy = Unbounded()};
    const AdmissionPlan held = scene.Plan();
    EXPECT_EQ(held.admit, 0);
    EXPECT_EQ(held.stop, AdmissionStop::kKvPressure);
    // With nothing live the pressure no longer holds anything back.
    scene.live_headroom.clear();
    EXPECT_GT(scene.Plan().admit, 0);
  }
}

TEST(AdmissionPlan, LiveAndAdmittedSentencesStayWithinMaxBatchSequences) {
  std::mt19937 rng(5);
  for (int c = 0; c < kCases; ++c) {
    const int max_sequences = static_cast<int>(RandomInt(rng, 1, 16));
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 24)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 0, max_sequences + 2)),
                .policy = Unbounded()};
    scene.policy.max_batch_sequences = max_sequences;
    const int64_t live = static_cast<int64_t>(scene.live_headroom.size());
    const int64_t room = std::max<int64_t>(0, max_sequences - live);
    const AdmissionPlan plan = scene.Plan();
    EXPECT_EQ(plan.admit, std::min<int64_t>(room, scene.queue.size()));
    if (room < static_cast<int64_t>(scene.queue.size())) {
      EXPECT_EQ(plan.stop, AdmissionStop::kSequences);
    }
  }
}

TEST(AdmissionPlan, MaxBatchSequencesBelowOneStillRunsOneSentence) {
  std::mt19937 rng(6);
  Scene scene{.queue = RandomQueue(rng, 5), .policy = Unbounded()};
  scene.policy.max_batch_sequences = 0;
  EXPECT_EQ(scene.Plan().admit, 1);
  scene.live_headroom = RandomLive(rng, 1);
  EXPECT_EQ(scene.Plan().admit, 0);
}

TEST(AdmissionPlan, AdmittedTokensStayWithinMaxBatchTokens) {
  std::mt19937 rng(7);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 2, 30)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 0, 3)),
                .policy = Unbounded()};
    scene.policy.max_batch_tokens = static_cast<int>(RandomInt(rng, 64, 400));
    const AdmissionPlan plan = scene.Plan();
    ASSERT_GT(plan.admit, 0);  // every sentence is shorter than the bound
    EXPECT_LE(SumTokens(scene.queue, plan.admit), scene.policy.max_batch_tokens);
    if (plan.admit < static_cast<int64_t>(scene.queue.size())) {
      // FIFO: it stopped because the next one would not fit.
      EXPECT_EQ(plan.stop, AdmissionStop::kTokens);
      EXPECT_GT(SumTokens(scene.queue, plan.admit + 1), scene.policy.max_batch_tokens);
    }
  }
}

TEST(AdmissionPlan, ASentenceLongerThanMaxBatchTokensIsAdmittedAlone) {
  std::mt19937 rng(8);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 2, 10)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 0, 3)),
                .policy = Unbounded()};
    scene.policy.max_batch_tokens = 64;
    scene.queue.front().source_tokens = RandomInt(rng, 65, 512);
    const AdmissionPlan plan = scene.Plan();
    EXPECT_EQ(plan.admit, 1);
    EXPECT_EQ(plan.stop, AdmissionStop::kTokens);
  }
}

TEST(AdmissionPlan, TheQueueIsNeverOvertakenPastASentenceThatDoesNotFit) {
  std::mt19937 rng(9);
  for (int c = 0; c < kCases; ++c) {
    // Short sentences around one that does not fit beside them: nothing behind it goes first.
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 3, 10), /*max_tokens=*/8),
                .policy = Unbounded()};
    scene.policy.max_batch_tokens = 100;
    const size_t blocked =
        static_cast<size_t>(RandomInt(rng, 1, static_cast<int64_t>(scene.queue.size()) - 2));
    scene.queue[blocked].source_tokens = 100;
    EXPECT_EQ(scene.Plan().admit, static_cast<int64_t>(blocked));
  }
}

TEST(AdmissionPlan, LiveAndAdmittedHeadroomStaysWithinTheKvPool) {
  std::mt19937 rng(10);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 20)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 1, 4)),
                .blocks_in_use = RandomInt(rng, 0, 200),
                .policy = Unbounded()};
    int64_t committed = scene.blocks_in_use;
    for (int64_t h : scene.live_headroom) committed += h;
    scene.capacity_blocks = committed + RandomInt(rng, 0, 200);
    const AdmissionPlan plan = scene.Plan();
    EXPECT_LE(committed + SumHeadroom(scene.queue, plan.admit), scene.capacity_blocks);
    if (plan.admit < static_cast<int64_t>(scene.queue.size())) {
      EXPECT_EQ(plan.stop, AdmissionStop::kKvCache);
      EXPECT_GT(committed + SumHeadroom(scene.queue, plan.admit + 1), scene.capacity_blocks);
    }
  }
}

TEST(AdmissionPlan, AnUnboundedKvPoolAdmitsWhateverTheHeadroom) {
  std::mt19937 rng(11);
  Scene scene{.queue = RandomQueue(rng, 12, 64, /*max_headroom=*/1 << 20),
              .live_headroom = RandomLive(rng, 3),
              .blocks_in_use = RandomInt(rng, 1, 1 << 20),
              .capacity_blocks = 0,
              .policy = Unbounded()};
  EXPECT_EQ(scene.Plan().admit, 12);
}

TEST(AdmissionPlan, WithNothingLiveTheFirstSentenceIsAdmittedWhateverItsSize) {
  std::mt19937 rng(12);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 6)),
                .blocks_in_use = RandomInt(rng, 0, 50),
                .capacity_blocks = RandomInt(rng, 1, 50),
                .policy = Unbounded()};
    scene.policy.max_batch_tokens = static_cast<int>(RandomInt(rng, 1, 64));
    scene.queue.front().source_tokens = RandomInt(rng, 65, 512);
    scene.queue.front().headroom_blocks = RandomInt(rng, 51, 500);
    const AdmissionPlan plan = scene.Plan();
    EXPECT_EQ(plan.admit, 1);  // and alone: it already passes both bounds
  }
}

TEST(AdmissionPlan, WhileSentencesAreLiveTheQueueWaitsForAGroup) {
  std::mt19937 rng(13);
  for (int c = 0; c < kCases; ++c) {
    const int group = static_cast<int>(RandomInt(rng, 2, 8));
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, group - 1)),
                .live_headroom = RandomLive(rng, RandomInt(rng, 1, 4)),
                .policy = Unbounded()};
    scene.policy.admission_group = group;
    scene.policy.max_admission_wait_steps = static_cast<int>(RandomInt(rng, 1, 10));
    scene.steps = RandomInt(rng, 0, scene.policy.max_admission_wait_steps - 1);
    const AdmissionPlan waiting = scene.Plan();
    EXPECT_EQ(waiting.admit, 0);
    EXPECT_EQ(waiting.stop, AdmissionStop::kWaitingForGroup);
    // A full group goes at once.
    const std::vector<QueuedSentence> more = RandomQueue(rng, group);
    scene.queue.insert(scene.queue.end(), more.begin(), more.end());
    EXPECT_EQ(scene.Plan().admit, static_cast<int64_t>(scene.queue.size()));
  }
}

TEST(AdmissionPlan, TheOldestEndsTheWaitAfterMaxAdmissionWaitSteps) {
  std::mt19937 rng(14);
  for (int c = 0; c < kCases; ++c) {
    Scene scene{.queue = RandomQueue(rng, RandomInt(rng, 1, 3)),
                .live_headroom = RandomLive(rng, 2),
                .policy = Unbounded()};
    scene.policy.admission_group = 4;
    scene.policy.max_admission_wait_steps = static_cast<int>(RandomInt(rng, 0, 10));
    scene.queue.front().queued_at_step = RandomInt(rng, 0, 1000);
    scene.steps = scene.queue.front().queued_at_step + scene.policy.max_admission_wait_steps;
    EXPECT_EQ(scene.Plan().admit, static_cast<int64_t>(scene.queue.size()));
    if (scene.policy.max_admission_wait_steps > 0) {
      --scene.steps;
      EXPECT_EQ(scene.Plan().admit, 0);
    }
  }
}

TEST(AdmissionPlan, WithNothingLiveThereIsNoGroupToWaitFor) {
  std::mt19937 rng(15);
  Scene scene{.queue = RandomQueue(rng, 1), .policy = Unbounded()};
  scene.policy.admission_group = 8;
  scene.policy.max_admission_wait_steps = 100;
  EXPECT_EQ(scene.Plan().admit, 1);
}

TEST(AdmissionPlan, AGroupGoesAsSoonAsTheRoomHoldsIt) {
  std::mt19937 rng(16);
  for (int c = 0; c < kCases; ++c) {
    const int group = static_cast<int>(RandomInt(rng, 2, 8));
    const int64_t live = RandomInt(rng, 1, 4);
    Scene scene{.queue = RandomQueue(rng, group + RandomInt(rng, 0, 10)),
                .live_headroom = RandomLive(rng, live),
                .policy = Unbounded()};
    scene.policy.admission_group = group;
    scene.policy.max_admission_wait_steps = 100;
    scene.policy.max_batch_sequences = static_cast<int>(live) + group;  // room for the group
    EXPECT_EQ(scene.Plan().admit, group);
  }
}

TEST(PreemptionPlan, TheNewestLiveSentenceGoesBackToTheQueue) {
  std::mt19937 rng(17);
  for (int c = 0; c < kCases; ++c) {
    const size_t live = static_cast<size_t>(RandomInt(rng, 2, 64));
    EXPECT_EQ(PlanPreemption(live), live - 1);
  }
}

TEST(PreemptionPlan, ALoneSentenceIsNeverPreempted) {
  EXPECT_EQ(PlanPreemption(1), std::nullopt);
  EXPECT_EQ(PlanPreemption(0), std::nullopt);
}

}  // namespace
}  // namespace transerve
