// The budget's decisions (server/models/room_plan.h) over drawn sets of loaded models: what is
// unloaded, in which order, and when a load may start.
#include "server/models/room_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

constexpr int64_t kMb = 1 << 20;

absl::Time At(int seconds) { return absl::FromUnixSeconds(1'000'000 + seconds); }

TEST(RoomPlanTest, FitsWhenTheBudgetHasRoom) {
  const RoomPlan plan =
      PlanRoom({{"a", 10 * kMb, At(1), false}}, {10 * kMb, 1, 0, 0}, 10 * kMb, {30 * kMb, 0});
  EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kFits);
  EXPECT_TRUE(plan.unload.empty());
  EXPECT_TRUE(plan.drain.empty());
}

TEST(RoomPlanTest, ALargerModelThanTheBudgetNeverFits) {
  const RoomPlan plan = PlanRoom({}, {}, 50 * kMb, {30 * kMb, 0});
  EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kNever);
  EXPECT_NE(plan.reason.find("50 MB"), std::string::npos) << plan.reason;
  EXPECT_NE(plan.reason.find("30 MB"), std::string::npos) << plan.reason;
}

TEST(RoomPlanTest, UnloadsTheLeastRecentlyUsedIdleModelFirst) {
  const std::vector<EvictionCandidate> loaded{{"new", 10 * kMb, At(9), false},
                                              {"old", 10 * kMb, At(1), false},
                                              {"older_busy", 10 * kMb, At(0), true}};
  const RoomPlan plan = PlanRoom(loaded, {30 * kMb, 3, 0, 0}, 10 * kMb, {30 * kMb, 0});
  EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kWait);  // it fits once "old" is freed
  EXPECT_EQ(plan.unload, std::vector<std::string>{"old"});
  EXPECT_TRUE(plan.drain.empty());
}

TEST(RoomPlanTest, DrainsABusyModelOnlyWhenTheIdleOnesAreNotEnough) {
  const std::vector<EvictionCandidate> loaded{{"busy_old", 10 * kMb, At(1), true},
                                              {"busy_new", 10 * kMb, At(5), true},
                                              {"idle", 5 * kMb, At(9), false}};
  const RoomPlan plan = PlanRoom(loaded, {25 * kMb, 3, 0, 0}, 15 * kMb, {30 * kMb, 0});
  EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kWait);
  EXPECT_EQ(plan.unload, std::vector<std::string>{"idle"});
  EXPECT_EQ(plan.drain, std::vector<std::string>{"busy_old"});
}

TEST(RoomPlanTest, WhatIsAlreadyLeavingIsCountedBeforeUnloadingMore) {
  // 20 MB of 30 are on their way out: a 10 MB model needs nobody else to go, but must wait.
  const RoomPlan plan = PlanRoom({{"a", 10 * kMb, At(1), false}}, {30 * kMb, 2, 20 * kMb, 1},
                                 10 * kMb, {30 * kMb, 0});
  EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kWait);
  EXPECT_TRUE(plan.unload.empty());
  EXPECT_TRUE(plan.drain.empty());
}

TEST(RoomPlanTest, TheModelCountIsABudgetToo) {
  const std::vector<EvictionCandidate> loaded{{"a", kMb, At(2), false}, {"b", kMb, At(1), false}};
  const RoomPlan plan = PlanRoom(loaded, {2 * kMb, 2, 0, 0}, kMb, {0, 2});
  EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kWait);
  EXPECT_EQ(plan.unload, std::vector<std::string>{"b"});
  EXPECT_EQ(PlanRoom(loaded, {2 * kMb, 2, 0, 0}, kMb, {0, 3}).verdict, RoomPlan::Verdict::kFits);
}

// Drawn sets: the plan never unloads more than it needs (dropping its last choice would leave
// too little room), never drains while an idle candidate is left, chooses idle ones in LRU
// order, and fits only when the budget holds the new model with nothing leaving.
TEST(RoomPlanTest, DrawnSetsKeepTheRules) {
  std::mt19937 rng(19);
  for (int round = 0; round < 2000; ++round) {
    const RepositoryBudget budget{std::uniform_int_distribution<int64_t>(20, 100)(rng) * kMb,
                                  std::uniform_int_distribution<int>(0, 5)(rng)};
    std::vector<EvictionCandidate> loaded;
    RepositoryHoldings held;
    const int n = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < n; ++i) {
      EvictionCandidate c{absl::StrCat("m", i),
                          std::uniform_int_distribution<int64_t>(1, 20)(rng) * kMb,
                          At(std::uniform_int_distribution<int>(0, 100)(rng)),
                          std::bernoulli_distribution(0.4)(rng)};
      held.bytes += c.bytes;
      ++held.models;
      loaded.push_back(c);
    }
    const int64_t needed = std::uniform_int_distribution<int64_t>(1, 30)(rng) * kMb;
    const RoomPlan plan = PlanRoom(loaded, held, needed, budget);
    if (needed > budget.bytes) {
      EXPECT_EQ(plan.verdict, RoomPlan::Verdict::kNever);
      continue;
    }
    auto find = [&](const std::string& name) {
      return *std::find_if(loaded.begin(), loaded.end(),
                           [&](const EvictionCandidate& c) { return c.name == name; });
    };
    int64_t freed = 0;
    int freed_models = 0;
    for (const std::string& name : plan.unload) {
      EXPECT_FALSE(find(name).busy);
      freed += find(name).bytes;
      ++freed_models;
    }
    for (const std::string& name : plan.drain) {
      EXPECT_TRUE(find(name).busy);
      freed += find(name).bytes;
      ++freed_models;
    }
    const int idle = static_cast<int>(
        std::count_if(loaded.begin(), loaded.end(), [](const auto& c) { return !c.busy; }));
    if (!plan.drain.empty()) EXPECT_EQ(static_cast<int>(plan.unload.size()), idle);
    for (size_t i = 1; i < plan.unload.size(); ++i) {
      EXPECT_LE(find(plan.unload[i - 1]).last_used, find(plan.unload[i]).last_used);
    }
    const bool bytes_ok = held.bytes - freed + needed <= budget.bytes;
    const bool models_ok =
        budget.max_models == 0 || held.models - freed_models + 1 <= budget.max_models;
    if (freed_models < n) EXPECT_TRUE(bytes_ok && models_ok) << "round " << round;
    if (freed_models > 0) {
      // Without its last choice, there would not be room.
      const std::string& last = plan.drain.empty() ? plan.unload.back() : plan.drain.back();
      const bool bytes_without = held.bytes - (freed - find(last).bytes) + needed <= budget.bytes;
      const bool models_without =
          budget.max_models == 0 || held.models - (freed_models - 1) + 1 <= budget.max_models;
      EXPECT_FALSE(bytes_without && models_without) << "round " << round;
    }
    const bool fits = held.bytes + needed <= budget.bytes &&
                      (budget.max_models == 0 || held.models + 1 <= budget.max_models);
    EXPECT_EQ(plan.verdict == RoomPlan::Verdict::kFits, fits) << "round " << round;
  }
}

}  // namespace
}  // namespace transerve
