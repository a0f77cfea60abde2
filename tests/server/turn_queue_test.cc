// The scheduler's queue in turns by request (server/turn_queue.h), the bound on a large
// request's live sentences (server/admission_plan.h) and the spreading of a request over
// replicas (server/replica_set.h), on plain numbers.
#include "server/turn_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "server/admission_plan.h"
#include "server/replica_set.h"

namespace transerve {
namespace {

struct Item {
  int flow;
  int index;  // its place among its flow's items
};

std::vector<Item> Drain(TurnQueue<Item>& q) {
  std::vector<Item> out;
  while (!q.empty()) out.push_back(q.Take(q.begin()));
  return out;
}

TEST(TurnQueue, ALaterOneSentenceRequestWaitsForOneTurnNotTheWholeDocument) {
  TurnQueue<Item> q;
  TurnQueue<Item>::Flow document, call;
  for (int i = 0; i < 1000; ++i) q.Push(document, {0, i});
  // Two of the document's sentences are served, then the call arrives.
  EXPECT_EQ(q.Take(q.begin()).index, 0);
  EXPECT_EQ(q.Take(q.begin()).index, 1);
  q.Push(call, {1, 0});
  const std::vector<Item> order = Drain(q);
  const auto at =
      std::find_if(order.begin(), order.end(), [](const Item& i) { return i.flow == 1; });
  ASSERT_NE(at, order.end());
  EXPECT_LE(at - order.begin(), 1) << "the call waited behind the document";
}

TEST(TurnQueue, RequestsTakeTurnsAndEachKeepsItsOwnOrder) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    TurnQueue<Item> q;
    const int flows = std::uniform_int_distribution<int>(1, 6)(rng);
    std::vector<TurnQueue<Item>::Flow> turns(flows);
    std::vector<int> pushed(flows, 0);
    for (int f = 0; f < flows; ++f) {
      const int n = std::uniform_int_distribution<int>(1, 40)(rng);
      for (int i = 0; i < n; ++i) q.Push(turns[f], {f, pushed[f]++});
    }
    const std::vector<Item> order = Drain(q);
    ASSERT_EQ(order.size(), static_cast<size_t>(std::accumulate(pushed.begin(), pushed.end(), 0)));
    std::vector<int> next(flows, 0);
    std::vector<int> taken(flows, 0);
    for (size_t k = 0; k < order.size(); ++k) {
      const Item& item = order[k];
      EXPECT_EQ(item.index, next[item.flow]++) << "a request's sentences left their order";
      ++taken[item.flow];
      // All pushed at once: after k items, no flow that still has items is more than one
      // turn ahead of another.
      for (int f = 0; f < flows; ++f) {
        for (int g = 0; g < flows; ++g) {
          if (taken[f] < pushed[f] && taken[g] < pushed[g]) {
            EXPECT_LE(std::abs(taken[f] - taken[g]), 1) << "round " << round << " item " << k;
          }
        }
      }
    }
  }
}

TEST(TurnQueue, ItemsSentBackToTheFrontComeFirstNewestFirst) {
  TurnQueue<Item> q;
  TurnQueue<Item>::Flow a;
  for (int i = 0; i < 3; ++i) q.Push(a, {0, i});
  q.PushFront({1, 0});
  q.PushFront({1, 1});
  const std::vector<Item> order = Drain(q);
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0].flow, 1);
  EXPECT_EQ(order[0].index, 1);
  EXPECT_EQ(order[1].index, 0);
  EXPECT_EQ(order[2].flow, 0);
}

TEST(TurnQueue, AnErasedItemDoesNotServeItsTurn) {
  TurnQueue<Item> q;
  TurnQueue<Item>::Flow document, other, call;
  for (int i = 0; i < 10; ++i) q.Push(document, {0, i});
  for (int i = 0; i < 3; ++i) q.Push(other, {1, i});
  // The document leaves (cancelled) without being served: the turns stay where they were, so
  // a new call takes the first one, between the other request's first and second sentences.
  for (auto it = q.begin(); it != q.end();) it = it->second.flow == 0 ? q.Erase(it) : ++it;
  q.Push(call, {2, 0});
  const std::vector<Item> order = Drain(q);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0].flow, 1);
  EXPECT_EQ(order[1].flow, 2) << "the erased sentences' turns were counted as served";
  EXPECT_EQ(order[2].flow, 1);
}

TEST(RequestLiveLimit, BindsLargeRequestsOnlyWhileSmallOnesAreAbout) {
  AdmissionPolicy policy;
  policy.max_batch_sequences = 64;
  policy.max_request_live = 4;
  EXPECT_EQ(RequestLiveLimit(policy, false), 64);
  EXPECT_EQ(RequestLiveLimit(policy, true), 4);
  EXPECT_TRUE(IsSmallRequest(policy, 1));
  EXPECT_TRUE(IsSmallRequest(policy, 4));
  EXPECT_FALSE(IsSmallRequest(policy, 5));
  policy.max_request_live = 0;  // no bound
  EXPECT_EQ(RequestLiveLimit(policy, true), 64);
  EXPECT_FALSE(IsSmallRequest(policy, 1));
  policy.max_request_live = 100;
  policy.max_batch_sequences = 8;
  EXPECT_EQ(RequestLiveLimit(policy, true), 8);
}

TEST(IsBulkRequest, ALargeRequestWithMoreQueuedThanItsLiveShare) {
  AdmissionPolicy policy;
  policy.max_request_live = 4;
  EXPECT_TRUE(IsBulkRequest(policy, false, 5));
  EXPECT_FALSE(IsBulkRequest(policy, false, 4));   // near its end: steps freely
  EXPECT_FALSE(IsBulkRequest(policy, true, 400));  // small requests never are
  policy.max_request_live = 0;                     // no bound: nothing is bulk
  EXPECT_FALSE(IsBulkRequest(policy, false, 400));
}

TEST(SpreadOverReplicas, EachSentenceGoesToTheLeastLoadedReplica) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const size_t replicas = std::uniform_int_distribution<size_t>(1, 5)(rng);
    std::vector<int64_t> loads(replicas);
    for (auto& l : loads) l = std::uniform_int_distribution<int64_t>(0, 30)(rng);
    const size_t jobs = std::uniform_int_distribution<size_t>(0, 100)(rng);
    const std::vector<size_t> where = SpreadOverReplicas(loads, jobs);
    ASSERT_EQ(where.size(), jobs);
    std::vector<int64_t> load = loads;
    for (size_t j = 0; j < jobs; ++j) {
      ASSERT_LT(where[j], replicas);
      EXPECT_EQ(load[where[j]], *std::min_element(load.begin(), load.end()));
      ++load[where[j]];
    }
  }
  // A document on idle replicas alternates, so both decode it from its beginning.
  const std::vector<int64_t> idle{0, 0};
  EXPECT_EQ(SpreadOverReplicas(idle, 4), (std::vector<size_t>{0, 1, 0, 1}));
}

TEST(ReplicasFor, TheServersChoiceAndTheOperatorsWord) {
  EXPECT_EQ(ReplicasFor(0, Device::kCpu, 2), 2);
  EXPECT_EQ(ReplicasFor(0, Device::kCpu, 1), 1);
  EXPECT_EQ(ReplicasFor(0, Device::kCpu, 64), kMaxAutoReplicas);
  EXPECT_EQ(ReplicasFor(0, Device::kCuda, 16), 1);
  EXPECT_EQ(ReplicasFor(3, Device::kCuda, 16), 3);
  EXPECT_EQ(ReplicasFor(1, Device::kCpu, 16), 1);
}

}  // namespace
}  // namespace transerve
