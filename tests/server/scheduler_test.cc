// The scheduler against the tiny fixture model: same outputs as the Translator alone in both
// batching modes, one answer per job whatever happens (deadline, cancellation, full queue,
// shutdown, a decoder step that never returns, a tiny KV cache), and continuous batching letting a
// short job overtake a long one.
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "server/replica_set.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

constexpr absl::Duration kWait = absl::Seconds(30);

DecodingOptions Greedy(int max_length) {
  DecodingOptions o;
  o.beam_size = 1;
  o.max_length = max_length;
  return o;
}

DecodingOptions Beam(int max_length) {
  DecodingOptions o;
  o.beam_size = 4;
  o.num_hypotheses = 2;
  o.max_length = max_length;
  return o;
}

// What every job's callbacks saw: the answers (counted, to prove exactly one each), the number
// of progress calls, and the order jobs finished in.
class Outcomes {
 public:
  explicit Outcomes(size_t n) : results_(n), answers_(n, 0), progress_(n, 0) {}

  SentenceJob Job(size_t i, std::vector<int32_t> source, const DecodingOptions& options) {
    SentenceJob job;
    job.source_ids = std::move(source);
    job.options = options;
    job.on_progress = [this, i](const std::vector<int32_t>&) {
      absl::MutexLock lock(&mu_);
      ++progress_[i];
    };
    job.on_done = [this, i](absl::StatusOr<SearchResult> result) {
      absl::MutexLock lock(&mu_);
      results_[i] = std::move(result);
      ++answers_[i];
      order_.push_back(i);
    };
    return job;
  }

  // Waits until `count` answers arrived in all (false on timeout).
  bool WaitForAnswers(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return order_.size() >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
  }

  absl::StatusOr<SearchResult> result(size_t i) {
    absl::MutexLock lock(&mu_);
    if (!results_[i].has_value()) return absl::InternalError("no answer");
    return *results_[i];
  }
  int answers(size_t i) {
    absl::MutexLock lock(&mu_);
    return answers_[i];
  }
  int progress(size_t i) {
    absl::MutexLock lock(&mu_);
    return progress_[i];
  }
  std::vector<size_t> order() {
    absl::MutexLock lock(&mu_);
    return order_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::optional<absl::StatusOr<SearchResult>>> results_ ABSL_GUARDED_BY(mu_);
  std::vector<int> answers_ ABSL_GUARDED_BY(mu_);
  std::vector<int> progress_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> order_ ABSL_GUARDED_BY(mu_);
};

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string name = testing::kFixtureNames[0];
    const nlohmann::json expected = testing::LoadExpected(name);
    max_length_ = expected["max_length"].get<int>();
    sources_ = new std::vector<std::vector<int32_t>>();
    for (const auto& c : expected["cases"]) {
      sources_->push_back(c["source_ids"].get<std::vector<int32_t>>());
    }
    auto translator = NewTranslator(0);
    ASSERT_TRUE(translator.ok()) << translator.status();
    translator_ = translator->release();
    // References: every sentence alone, through the Translator's own static path.
    greedy_ = new std::vector<SearchResult>();
    beam_ = new std::vector<SearchResult>();
    for (const auto& s : *sources_) {
      auto g = translator_->TranslateIds(std::span(&s, 1), Greedy(max_length_));
      ASSERT_TRUE(g.ok()) << g.status();
      greedy_->push_back((*g)[0]);
      auto b = translator_->TranslateIds(std::span(&s, 1), Beam(max_length_));
      ASSERT_TRUE(b.ok()) << b.status();
      beam_->push_back((*b)[0]);
    }
  }
  static void TearDownTestSuite() {
    delete translator_;
    delete sources_;
    delete greedy_;
    delete beam_;
  }

  static absl::StatusOr<std::unique_ptr<Translator>> NewTranslator(int64_t kv_cache_max_bytes) {
    return Translator::Create({.model_dir = testing::FixtureModelDir(testing::kFixtureNames[0]),
                               .device = "cpu",
                               .num_threads = 1,
                               .kv_cache_max_bytes = kv_cache_max_bytes});
  }

  static void ExpectSameResult(const absl::StatusOr<SearchResult>& got, const SearchResult& want,
                               const std::string& what) {
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ASSERT_EQ(got->hypotheses.size(), want.hypotheses.size()) << what;
    for (size_t h = 0; h < want.hypotheses.size(); ++h) {
      EXPECT_EQ(got->hypotheses[h].ids, want.hypotheses[h].ids) << what << " hypothesis " << h;
      // GEMM kernels differ with the batch's row count: scores agree up to rounding.
      EXPECT_NEAR(got->hypotheses[h].score, want.hypotheses[h].score,
                  1e-5f * (1.0f + std::fabs(want.hypotheses[h].score)))
          << what << " hypothesis " << h;
    }
  }

  // A job whose first progress call parks the scheduler thread until released: the only way to
  // hold the queue still from outside (callbacks must not block in production).
  struct Parked {
    absl::Notification entered;
    absl::Notification release;
  };
  static SentenceJob ParkingJob(Outcomes* outcomes, size_t i, Parked* parked) {
    SentenceJob job = outcomes->Job(i, (*sources_)[0], Greedy(max_length_));
    auto count = std::move(job.on_progress);
    job.on_progress = [count, parked](const std::vector<int32_t>& ids) {
      count(ids);
      if (!parked->entered.HasBeenNotified()) {
        parked->entered.Notify();
        parked->release.WaitForNotification();
      }
    };
    return job;
  }

  // The fixture case whose greedy output is longest: a call that spans many steps.
  static size_t LongestGreedy() {
    size_t longest = 0;
    for (size_t i = 0; i < greedy_->size(); ++i) {
      if ((*greedy_)[i].hypotheses[0].ids.size() > (*greedy_)[longest].hypotheses[0].ids.size()) {
        longest = i;
      }
    }
    return longest;
  }

  static inline int max_length_ = 0;
  static inline std::vector<std::vector<int32_t>>* sources_ = nullptr;
  static inline Translator* translator_ = nullptr;
  static inline std::vector<SearchResult>* greedy_ = nullptr;
  static inline std::vector<SearchResult>* beam_ = nullptr;
};

struct ParityCase {
  BatchingMode mode;
  bool beam;
};

class SchedulerParityTest : public SchedulerTest,
                            public ::testing::WithParamInterface<ParityCase> {};

TEST_P(SchedulerParityTest, OutputsEqualTranslateIdsAlone) {
  const ParityCase p = GetParam();
  Scheduler scheduler(
      translator_,
      {.admission = {.mode = p.mode, .max_batch_sequences = 16, .max_batch_tokens = 300}});
  struct BatchBounds : Scheduler::Observer {
    void OnBatch(int sequences, int source_tokens, double, double) override {
      EXPECT_LE(sequences, 16);
      // Only a single sentence may exceed the token bound (it must not starve).
      if (sequences > 1) {
        EXPECT_LE(source_tokens, 300);
      }
    }
  } bounds;
  scheduler.SetObserver(&bounds);
  const size_t n = sources_->size();
  Outcomes outcomes(n);
  // Two submissions so the second arrives while the first is being decoded.
  std::vector<SentenceJob> first;
  std::vector<SentenceJob> second;
  for (size_t i = 0; i < n; ++i) {
    (i < n / 2 ? first : second)
        .push_back(
            outcomes.Job(i, (*sources_)[i], p.beam ? Beam(max_length_) : Greedy(max_length_)));
  }
  ASSERT_TRUE(scheduler.Submit(std::move(first)).ok());
  ASSERT_TRUE(scheduler.Submit(std::move(second)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n));
  for (size_t i = 0; i < n; ++i) {
    ExpectSameResult(outcomes.result(i), (p.beam ? *beam_ : *greedy_)[i],
                     "sentence " + std::to_string(i));
    EXPECT_EQ(outcomes.answers(i), 1);
  }
  EXPECT_TRUE(scheduler.Shutdown(absl::Seconds(5)).ok());
  const Scheduler::Stats stats = scheduler.stats();
  EXPECT_GT(stats.steps, 0);
  EXPECT_GE(stats.batches_admitted, static_cast<int64_t>(n / 16));
  EXPECT_EQ(stats.active_sequences, 0);
  EXPECT_EQ(stats.queued, 0);
  EXPECT_EQ(stats.kv_cache_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(ModesAndSearches, SchedulerParityTest,
                         ::testing::Values(ParityCase{BatchingMode::kContinuous, false},
                                           ParityCase{BatchingMode::kContinuous, true},
                                           ParityCase{BatchingMode::kStatic, false},
                                           ParityCase{BatchingMode::kStatic, true}),
                         [](const auto& info) {
                           return std::string(info.param.mode == BatchingMode::kContinuous
                                                  ? "Continuous"
                                                  : "Static") +
                                  (info.param.beam ? "Beam4" : "Greedy");
                         });

TEST_F(SchedulerTest, ConcurrentSubmittersEachGetTheirOwnResult) {
  Scheduler scheduler(translator_, {.admission = {.max_batch_sequences = 8}});
  constexpr int kThreads = 4;
  const size_t n = sources_->size();
  Outcomes outcomes(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Thread t owns sentences t, t + kThreads, ...; odd ones use beam search. Alternate
      // single submissions and pairs.
      std::vector<SentenceJob> pending;
      for (size_t i = static_cast<size_t>(t); i < n; i += kThreads) {
        pending.push_back(
            outcomes.Job(i, (*sources_)[i], i % 2 ? Beam(max_length_) : Greedy(max_length_)));
        if (pending.size() == 1 + (i / kThreads) % 2) {
          EXPECT_TRUE(scheduler.Submit(std::move(pending)).ok());
          pending.clear();
        }
      }
      if (!pending.empty()) {
        EXPECT_TRUE(scheduler.Submit(std::move(pending)).ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(outcomes.WaitForAnswers(n));
  for (size_t i = 0; i < n; ++i) {
    ExpectSameResult(outcomes.result(i), (i % 2 ? *beam_ : *greedy_)[i],
                     "sentence " + std::to_string(i));
    EXPECT_EQ(outcomes.answers(i), 1) << i;
  }
}

// Sentence 0 of the fixture generates max_length tokens greedily: the long job.
TEST_F(SchedulerTest, ContinuousModeLetsAShortJobFinishWhileALongOneRuns) {
  ASSERT_EQ((*greedy_)[0].hypotheses[0].ids.size(), static_cast<size_t>(max_length_));
  for (BatchingMode mode : {BatchingMode::kContinuous, BatchingMode::kStatic}) {
    Scheduler scheduler(translator_, {.admission = {.mode = mode}});
    Outcomes outcomes(2);
    SentenceJob long_job = outcomes.Job(0, (*sources_)[0], Greedy(max_length_));
    auto count = std::move(long_job.on_progress);
    std::atomic<bool> submitted{false};
    // The short job arrives right after the long one's first step (submitted from the
    // callback, so the timing is deterministic).
    long_job.on_progress = [&, count](const std::vector<int32_t>& ids) {
      count(ids);
      if (!submitted.exchange(true)) {
        std::vector<SentenceJob> jobs;
        jobs.push_back(outcomes.Job(1, (*sources_)[3], Greedy(2)));
        EXPECT_TRUE(scheduler.Submit(std::move(jobs)).ok());
      }
    };
    std::vector<SentenceJob> jobs;
    jobs.push_back(std::move(long_job));
    ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
    ASSERT_TRUE(outcomes.WaitForAnswers(2));
    const std::vector<size_t> expected_order =
        mode == BatchingMode::kContinuous ? std::vector<size_t>{1, 0} : std::vector<size_t>{0, 1};
    EXPECT_EQ(outcomes.order(), expected_order)
        << (mode == BatchingMode::kContinuous ? "continuous" : "static");
    ExpectSameResult(outcomes.result(0), (*greedy_)[0], "long");
    ASSERT_TRUE(outcomes.result(1).ok());
    EXPECT_EQ(outcomes.result(1)->hypotheses[0].ids.size(), 2u);
    EXPECT_EQ(outcomes.progress(0), max_length_ - 1);  // every step but the last
  }
}

TEST_F(SchedulerTest, ContinuousModeAdmitsInGroupsOrAfterTheWait) {
  ASSERT_GE(max_length_, 14);
  Scheduler scheduler(translator_, {.admission = {.mode = BatchingMode::kContinuous,
                                                  .admission_group = 3,
                                                  .max_admission_wait_steps = 5}});
  // Encoder batches: how many sentences, and how many decoder steps had run by then.
  struct Batches : Scheduler::Observer {
    void OnStep(int, double) override { ++steps; }
    void OnBatch(int sequences, int, double, double) override {
      seen.push_back({sequences, steps});
    }
    int steps = 0;
    std::vector<std::pair<int, int>> seen;
  } batches;
  scheduler.SetObserver(&batches);
  Outcomes outcomes(5);
  SentenceJob long_job = outcomes.Job(0, (*sources_)[0], Greedy(max_length_));
  auto count = std::move(long_job.on_progress);
  int steps_seen = 0;
  // Submitted from the long job's progress callback, so the timing is deterministic: one
  // sentence after step 1 (alone, it waits its 5 steps), a group of three after step 10 (in
  // at once).
  long_job.on_progress = [&, count](const std::vector<int32_t>& ids) {
    count(ids);
    ++steps_seen;
    std::vector<SentenceJob> jobs;
    if (steps_seen == 1) jobs.push_back(outcomes.Job(1, (*sources_)[1], Greedy(2)));
    if (steps_seen == 10) {
      for (size_t i = 2; i < 5; ++i) jobs.push_back(outcomes.Job(i, (*sources_)[i], Greedy(2)));
    }
    if (!jobs.empty()) {
      EXPECT_TRUE(scheduler.Submit(std::move(jobs)).ok());
    }
  };
  std::vector<SentenceJob> jobs;
  jobs.push_back(std::move(long_job));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(5));
  EXPECT_TRUE(scheduler.Shutdown(absl::Seconds(5)).ok());
  const std::vector<std::pair<int, int>> expected{{1, 0}, {1, 6}, {3, 10}};
  EXPECT_EQ(batches.seen, expected);
  ExpectSameResult(outcomes.result(0), (*greedy_)[0], "long");
  for (size_t i = 1; i < 5; ++i) {
    ASSERT_TRUE(outcomes.result(i).ok()) << i;
    // Its first token is the one it gets alone (the rest is cut by max_length 2).
    ASSERT_FALSE(outcomes.result(i)->hypotheses[0].ids.empty());
    EXPECT_EQ(outcomes.result(i)->hypotheses[0].ids[0], (*greedy_)[i].hypotheses[0].ids[0]);
  }
}

TEST_F(SchedulerTest, DeadlineInThePastIsDeadlineExceeded) {
  Scheduler scheduler(translator_, {});
  Outcomes outcomes(1);
  std::vector<SentenceJob> jobs;
  jobs.push_back(outcomes.Job(0, (*sources_)[0], Greedy(max_length_)));
  jobs[0].deadline = absl::Now() - absl::Seconds(1);
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(1));
  EXPECT_EQ(outcomes.result(0).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(outcomes.progress(0), 0);
  EXPECT_EQ(outcomes.answers(0), 1);
}

TEST_F(SchedulerTest, DeadlinePassingMidDecodeIsDeadlineExceeded) {
  Scheduler scheduler(translator_, {});
  Outcomes outcomes(1);
  std::vector<SentenceJob> jobs;
  jobs.push_back(outcomes.Job(0, (*sources_)[0], Greedy(max_length_)));
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);
  jobs[0].deadline = deadline;
  auto count = std::move(jobs[0].on_progress);
  jobs[0].on_progress = [count, deadline](const std::vector<int32_t>& ids) {
    count(ids);
    // Slow the decode down past the deadline.
    absl::SleepFor(deadline - absl::Now() + absl::Milliseconds(5));
  };
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(1));
  EXPECT_EQ(outcomes.result(0).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LE(outcomes.progress(0), 1);
}

TEST_F(SchedulerTest, CancelledMidDecodeIsCancelledAndGivesItsBlocksBack) {
  Scheduler scheduler(translator_, {});
  Outcomes outcomes(1);
  std::atomic<bool> cancelled{false};
  std::atomic<int64_t> bytes_in_use_at_answer{-1};
  std::atomic<int64_t> bytes_in_use_while_running{0};
  std::vector<SentenceJob> jobs;
  jobs.push_back(outcomes.Job(0, (*sources_)[0], Beam(max_length_)));
  jobs[0].cancelled = [&] { return cancelled.load(); };
  auto count = std::move(jobs[0].on_progress);
  jobs[0].on_progress = [&, count](const std::vector<int32_t>& ids) {
    count(ids);
    // Callbacks run on the scheduler thread, which owns the translator: reading its pool
    // here is safe.
    bytes_in_use_while_running = translator_->kv_pool().bytes_in_use();
    if (ids.size() == 3) cancelled = true;
  };
  auto done = std::move(jobs[0].on_done);
  jobs[0].on_done = [&, done](absl::StatusOr<SearchResult> result) {
    bytes_in_use_at_answer = translator_->kv_pool().bytes_in_use();
    done(std::move(result));
  };
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(1));
  EXPECT_EQ(outcomes.result(0).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(outcomes.progress(0), 3);  // it left before the next step
  EXPECT_GT(bytes_in_use_while_running.load(), 0);
  EXPECT_EQ(bytes_in_use_at_answer.load(), 0);
}

TEST_F(SchedulerTest, QueuedJobsThatExpireOrAreCancelledAreAnsweredWithoutRunning) {
  Scheduler scheduler(translator_, {.admission = {.mode = BatchingMode::kStatic}});
  Outcomes outcomes(4);
  Parked parked;
  std::vector<SentenceJob> jobs;
  jobs.push_back(ParkingJob(&outcomes, 0, &parked));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  parked.entered.WaitForNotification();  // static mode: the others wait in the queue
  std::atomic<bool> cancelled{false};
  jobs.clear();
  for (size_t i = 1; i < 4; ++i) {
    jobs.push_back(outcomes.Job(i, (*sources_)[i], Greedy(max_length_)));
  }
  jobs[0].deadline = absl::Now() + absl::Milliseconds(20);
  jobs[1].cancelled = [&] { return cancelled.load(); };
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  cancelled = true;
  absl::SleepFor(absl::Milliseconds(40));
  parked.release.Notify();
  ASSERT_TRUE(outcomes.WaitForAnswers(4));
  EXPECT_EQ(outcomes.result(1).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(outcomes.result(2).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(outcomes.progress(1), 0);
  EXPECT_EQ(outcomes.progress(2), 0);
  ExpectSameResult(outcomes.result(0), (*greedy_)[0], "sentence 0");
  ExpectSameResult(outcomes.result(3), (*greedy_)[3], "sentence 3");
  // The two that left were answered while sentence 0 still ran (between its steps).
  const std::vector<size_t> order = outcomes.order();
  EXPECT_EQ(std::vector<size_t>(order.begin(), order.begin() + 2), (std::vector<size_t>{1, 2}));
}

// The queue's time budget: sentences still queued past max_queue_wait are answered
// RESOURCE_EXHAUSTED without running; the one already decoding is not affected.
TEST_F(SchedulerTest, SentencesQueuedPastTheBudgetAreResourceExhausted) {
  Scheduler scheduler(translator_, {.admission = {.mode = BatchingMode::kStatic},
                                    .max_queue_wait = absl::Seconds(1)});
  Outcomes outcomes(3);
  Parked parked;
  std::vector<SentenceJob> jobs;
  jobs.push_back(ParkingJob(&outcomes, 0, &parked));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  // Static mode: the others wait in the queue. (The budget is long enough that even a loaded
  // machine admits this first sentence within it.)
  ASSERT_TRUE(parked.entered.WaitForNotificationWithTimeout(kWait));
  jobs.clear();
  for (size_t i = 1; i < 3; ++i) jobs.push_back(outcomes.Job(i, (*sources_)[i], Beam(max_length_)));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  absl::SleepFor(absl::Milliseconds(1500));
  parked.release.Notify();
  ASSERT_TRUE(outcomes.WaitForAnswers(3));
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(outcomes.result(i).status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(outcomes.result(i).status().message().find("in the queue"), std::string::npos);
    EXPECT_EQ(outcomes.progress(i), 0);
  }
  ExpectSameResult(outcomes.result(0), (*greedy_)[0], "the sentence decoding meanwhile");
  // Within the budget, the same sentences are served (by a scheduler of their own: one
  // translator serves one scheduler at a time, as ThreadSanitizer pointed out).
  EXPECT_TRUE(scheduler.Shutdown(absl::ZeroDuration()).ok());
  Outcomes served(2);
  jobs.clear();
  for (size_t i = 0; i < 2; ++i)
    jobs.push_back(served.Job(i, (*sources_)[i + 1], Beam(max_length_)));
  Scheduler roomy(translator_, {.max_queue_wait = absl::Seconds(30)});
  ASSERT_TRUE(roomy.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(served.WaitForAnswers(2));
  ExpectSameResult(served.result(0), (*beam_)[1], "sentence 1");
  ExpectSameResult(served.result(1), (*beam_)[2], "sentence 2");
}

// The budget does not run while one of the request's sentences decodes, however long that one
// sentence takes: its next sentence waits for it and is served, not answered RESOURCE_EXHAUSTED.
TEST_F(SchedulerTest, OneSentenceOutlastingTheBudgetKeepsItsRequestsOthersQueued) {
  Scheduler scheduler(translator_, {.admission = {.max_batch_sequences = 1},
                                    .max_queue_wait = absl::Milliseconds(50)});
  Outcomes outcomes(2);
  Parked parked;
  std::vector<SentenceJob> jobs;
  jobs.push_back(ParkingJob(&outcomes, 0, &parked));
  jobs.push_back(outcomes.Job(1, (*sources_)[1], Greedy(max_length_)));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(parked.entered.WaitForNotificationWithTimeout(kWait));
  absl::SleepFor(absl::Milliseconds(200));  // sentence 0 decoding, 4 budgets long
  parked.release.Notify();
  ASSERT_TRUE(outcomes.WaitForAnswers(2));
  ExpectSameResult(outcomes.result(0), (*greedy_)[0], "sentence 0");
  ExpectSameResult(outcomes.result(1), (*greedy_)[1], "sentence 1");
}

// A request's own sentences never spend its queue budget: a document that takes many times the
// budget to translate, one sentence at a time, is answered in full, each sentence as alone.
TEST_F(SchedulerTest, ARequestsOwnSentencesNeverExhaustItsQueueBudget) {
  std::mt19937 rng(20261204);
  const size_t n = 24;
  std::vector<size_t> picks(n);
  for (auto& p : picks) p = std::uniform_int_distribution<size_t>(0, sources_->size() - 1)(rng);
  // One sentence at a time and 2 ms a step: the last sentence is admitted long after the
  // budget (24 sentences x up to max_length steps).
  Scheduler scheduler(translator_, {.admission = {.max_batch_sequences = 1},
                                    .max_queue_wait = absl::Milliseconds(150),
                                    .before_step_for_test = [](int64_t) {
                                      absl::SleepFor(absl::Milliseconds(2));
                                    }});
  Outcomes outcomes(n);
  std::vector<SentenceJob> jobs;
  for (size_t i = 0; i < n; ++i)
    jobs.push_back(outcomes.Job(i, (*sources_)[picks[i]], Greedy(max_length_)));
  const absl::Time start = absl::Now();
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n));
  EXPECT_GT(absl::Now() - start, absl::Milliseconds(300)) << "the work did not outlast the budget";
  for (size_t i = 0; i < n; ++i) {
    ExpectSameResult(outcomes.result(i), (*greedy_)[picks[i]], "sentence " + std::to_string(i));
  }
  EXPECT_EQ(outcomes.order(), [n] {
    std::vector<size_t> in_order(n);
    for (size_t i = 0; i < n; ++i) in_order[i] = i;
    return in_order;
  }()) << "a request's sentences are admitted in their order";
}

// A one-sentence call that arrives while a document is queued waits for one of the
// document's sentences, not for all of them; the document's own sentences keep their order.
TEST_F(SchedulerTest, AnotherCallersSentenceIsServedBetweenADocumentsSentences) {
  const size_t n = 12;
  Scheduler scheduler(translator_, {.admission = {.max_batch_sequences = 1}});
  Outcomes outcomes(n + 1);
  std::vector<SentenceJob> jobs;
  for (size_t i = 0; i < n; ++i)
    jobs.push_back(outcomes.Job(i, (*sources_)[i % sources_->size()], Greedy(max_length_)));
  std::atomic<bool> submitted{false};
  auto count = std::move(jobs[0].on_progress);
  jobs[0].on_progress = [&, count](const std::vector<int32_t>& ids) {
    count(ids);
    if (!submitted.exchange(true)) {
      std::vector<SentenceJob> call;
      call.push_back(outcomes.Job(n, (*sources_)[1], Greedy(max_length_)));
      EXPECT_TRUE(scheduler.Submit(std::move(call)).ok());
    }
  };
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n + 1));
  const std::vector<size_t> order = outcomes.order();
  const size_t at = std::find(order.begin(), order.end(), n) - order.begin();
  EXPECT_LE(at, 2u) << "the call waited behind the document";
  std::vector<size_t> document;
  for (size_t i : order) {
    if (i != n) document.push_back(i);
  }
  EXPECT_TRUE(std::is_sorted(document.begin(), document.end()));
  ExpectSameResult(outcomes.result(n), (*greedy_)[1], "the call");
}

// While a small request has work, a large one decodes at most max_request_live sentences at
// once; alone, it fills the batch.
TEST_F(SchedulerTest, ALargeRequestHoldsFewSentencesWhileASmallOneHasWork) {
  const size_t n = 40;
  AdmissionPolicy policy;
  policy.max_batch_sequences = 16;
  policy.max_request_live = 3;
  // Steps are numbered by the hook; progress calls say which sentences a step ran.
  absl::Mutex mu;
  int64_t step = 0;
  std::map<int64_t, std::set<size_t>> document_rows;  // step -> the document's sentences in it
  std::set<int64_t> call_steps;
  Scheduler scheduler(translator_, {.admission = policy, .before_step_for_test = [&](int64_t s) {
                                      absl::MutexLock lock(&mu);
                                      step = s;
                                    }});
  Outcomes outcomes(n + 1);
  std::vector<SentenceJob> jobs;
  std::atomic<bool> submitted{false};
  for (size_t i = 0; i < n; ++i) {
    // Short sentences, so the document's share shrinks within a few steps of the call.
    jobs.push_back(outcomes.Job(i, (*sources_)[i % sources_->size()], Greedy(3)));
    auto count = std::move(jobs.back().on_progress);
    jobs.back().on_progress = [&, count, i](const std::vector<int32_t>& ids) {
      count(ids);
      {
        absl::MutexLock lock(&mu);
        document_rows[step].insert(i);
      }
      if (!submitted.exchange(true)) {
        std::vector<SentenceJob> call;
        call.push_back(outcomes.Job(n, (*sources_)[0], Greedy(max_length_)));
        auto counted = std::move(call.back().on_progress);
        call.back().on_progress = [&, counted](const std::vector<int32_t>& ids) {
          counted(ids);
          absl::MutexLock lock(&mu);
          call_steps.insert(step);
        };
        EXPECT_TRUE(scheduler.Submit(std::move(call)).ok());
      }
    };
  }
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n + 1));
  ExpectSameResult(outcomes.result(n), (*greedy_)[0], "the call");
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(outcomes.result(i).ok()) << i;
  absl::MutexLock lock(&mu);
  ASSERT_GT(call_steps.size(), 6u);
  size_t most_alone = 0;
  for (const auto& [s, rows] : document_rows) {
    if (!call_steps.contains(s)) most_alone = std::max(most_alone, rows.size());
  }
  EXPECT_GT(most_alone, 3u) << "alone, the document should have filled more of the batch";
  // A step's progress reports the sentences that stay live; the document's sentences admitted
  // before the call leave within 3 steps: from then on it holds at most 3.
  const int64_t settled = *call_steps.begin() + 3;
  size_t shared_steps = 0;
  for (int64_t s : call_steps) {
    if (s < settled || !document_rows.contains(s)) continue;
    ++shared_steps;
    EXPECT_LE(document_rows[s].size(), 3u) << "step " << s;
  }
  EXPECT_GT(shared_steps, 3u) << "the call and the document hardly ran side by side";
}

// While a small call has work, a bulk request's live sentences (more queued than it may hold)
// join one step in kBulkStepEvery, and every step again once the call is done; the sentences
// that sat steps out still give exactly their outputs alone.
TEST_F(SchedulerTest, ABulkRequestSitsOutMostStepsOfASmallCall) {
  const size_t n = 40;
  AdmissionPolicy policy;
  policy.max_batch_sequences = 16;
  policy.max_request_live = 3;
  // The call decodes the fixture's longest greedy output, so it spans many steps.
  const size_t longest = LongestGreedy();
  absl::Mutex mu;
  int64_t step = 0;
  std::set<int64_t> document_steps, call_steps;
  Scheduler scheduler(translator_, {.admission = policy, .before_step_for_test = [&](int64_t s) {
                                      absl::MutexLock lock(&mu);
                                      step = s;
                                    }});
  Outcomes outcomes(n + 1);
  std::vector<SentenceJob> jobs;
  std::atomic<bool> submitted{false};
  for (size_t i = 0; i < n; ++i) {
    jobs.push_back(outcomes.Job(i, (*sources_)[i % sources_->size()], Greedy(max_length_)));
    auto count = std::move(jobs.back().on_progress);
    jobs.back().on_progress = [&, count](const std::vector<int32_t>& ids) {
      count(ids);
      {
        absl::MutexLock lock(&mu);
        document_steps.insert(step);
      }
      if (!submitted.exchange(true)) {
        std::vector<SentenceJob> call;
        call.push_back(outcomes.Job(n, (*sources_)[longest], Greedy(max_length_)));
        auto counted = std::move(call.back().on_progress);
        call.back().on_progress = [&, counted](const std::vector<int32_t>& ids) {
          counted(ids);
          absl::MutexLock lock(&mu);
          call_steps.insert(step);
        };
        EXPECT_TRUE(scheduler.Submit(std::move(call)).ok());
      }
    };
  }
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n + 1));
  ExpectSameResult(outcomes.result(n), (*greedy_)[longest], "the call");
  for (size_t i = 0; i < n; ++i) {
    ExpectSameResult(outcomes.result(i), (*greedy_)[i % sources_->size()],
                     absl::StrCat("document sentence ", i));
  }
  absl::MutexLock lock(&mu);
  ASSERT_GE(call_steps.size(), 8u);
  // The call's steps are consecutive; the document is in one of every kBulkStepEvery.
  const int64_t first = *call_steps.begin(), last = *call_steps.rbegin();
  EXPECT_EQ(static_cast<int64_t>(call_steps.size()), last - first + 1);
  int64_t shared = 0;
  for (int64_t s = first; s <= last; ++s) shared += document_steps.contains(s) ? 1 : 0;
  const int64_t steps = last - first + 1;
  EXPECT_GE(shared, steps / kBulkStepEvery - 1) << "the document starved beside the call";
  EXPECT_LE(shared, steps / kBulkStepEvery + 1) << "the document took steps from the call";
  // Before the call and after it, the document is in every step it has.
  EXPECT_TRUE(document_steps.contains(first - 1));
  for (int64_t s = last + 2; s <= last + 4; ++s) {
    EXPECT_TRUE(document_steps.contains(s)) << "step " << s << " after the call left";
  }
}

// Over replicas: while a small call runs on one, a replica with only the bulk request's
// sentences makes room for it (waits about a step's time for each step it sits out) instead
// of decoding side by side on the other core; everything still gives its output alone. (That
// it never starves is the bounded wait: ABulkRequestSitsOutMostStepsOfASmallCall counts it.)
TEST_F(SchedulerTest, AReplicaWithOnlyBulkWorkMakesRoomForASmallCallOnAnother) {
  // Long enough that each replica's share keeps more rows queued than max_request_live while the
  // call runs (a share near its end is no longer bulk, and steps freely).
  const size_t n = 240;
  AdmissionPolicy policy;
  policy.max_batch_sequences = 16;
  policy.max_request_live = 3;
  const size_t longest = LongestGreedy();
  absl::Mutex mu;
  std::vector<std::pair<std::thread::id, absl::Time>> steps;  // every step: its loop, when
  std::optional<std::thread::id> call_thread;
  absl::Time call_first = absl::InfiniteFuture(), call_last = absl::InfinitePast();
  auto set = ReplicaSet::Create(translator_, 2,
                                {.admission = policy, .before_step_for_test = [&](int64_t) {
                                   absl::MutexLock lock(&mu);
                                   steps.emplace_back(std::this_thread::get_id(), absl::Now());
                                 }});
  ASSERT_TRUE(set.ok()) << set.status();
  Outcomes outcomes(n + 1);
  std::vector<SentenceJob> jobs;
  std::atomic<bool> submitted{false};
  for (size_t i = 0; i < n; ++i) {
    jobs.push_back(outcomes.Job(i, (*sources_)[i % sources_->size()], Greedy(max_length_)));
    auto count = std::move(jobs.back().on_progress);
    jobs.back().on_progress = [&, count](const std::vector<int32_t>& ids) {
      count(ids);
      if (submitted.exchange(true)) return;
      std::vector<SentenceJob> call;
      call.push_back(outcomes.Job(n, (*sources_)[longest], Greedy(max_length_)));
      auto counted = std::move(call.back().on_progress);
      call.back().on_progress = [&, counted](const std::vector<int32_t>& ids) {
        counted(ids);
        absl::MutexLock lock(&mu);
        call_thread = std::this_thread::get_id();
        call_first = std::min(call_first, absl::Now());
        call_last = absl::Now();
      };
      EXPECT_TRUE((*set)->Submit(std::move(call)).ok());
    };
  }
  ASSERT_TRUE((*set)->Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n + 1));
  ExpectSameResult(outcomes.result(n), (*greedy_)[longest], "the call");
  for (size_t i = 0; i < n; ++i) {
    ExpectSameResult(outcomes.result(i), (*greedy_)[i % sources_->size()],
                     absl::StrCat("document sentence ", i));
  }
  ASSERT_TRUE((*set)->Shutdown(absl::Seconds(5)).ok());
  absl::MutexLock lock(&mu);
  ASSERT_TRUE(call_thread.has_value());
  // Steps of each loop while the call ran, and in a window right after it (longer, for enough
  // steps to count, and at least 100 ms: on a loaded machine a loop may not be scheduled for
  // tens of milliseconds, which left too few steps to compare), when both replicas decode the
  // document alone: the bulk-only replica's pace against the call's
  // replica, beside the call and without it (a ratio of ratios, so that a slow machine or a
  // sanitizer, which slow both loops alike, do not move it).
  const absl::Duration span = std::max(4 * (call_last - call_first), absl::Milliseconds(100));
  int64_t beside_call = 0, elsewhere = 0, after_there = 0, after_elsewhere = 0;
  for (const auto& [thread, at] : steps) {
    const bool there = thread == *call_thread;
    if (at > call_first && at < call_last) (there ? beside_call : elsewhere) += 1;
    if (at > call_last && at < call_last + span) (there ? after_there : after_elsewhere) += 1;
  }
  ASSERT_GE(beside_call, 6) << "the call hardly ran";
  ASSERT_GE(after_there, 4) << "the document ended with the call: nothing to compare with";
  ASSERT_GE(after_elsewhere, 4) << "the document ended with the call: nothing to compare with";
  const double with_call = static_cast<double>(elsewhere) / static_cast<double>(beside_call);
  const double without = static_cast<double>(after_elsewhere) / static_cast<double>(after_there);
  std::cout << "bulk-only replica's steps per step of the call's replica: " << with_call
            << " beside the call (" << elsewhere << "/" << beside_call << "), " << without
            << " after it (" << after_elsewhere << "/" << after_there << ")\n";
  EXPECT_LE(with_call, 0.4 * without)
      << "the bulk-only replica kept decoding beside the call: " << elsewhere << " steps against "
      << beside_call << ", after it " << after_elsewhere << " against " << after_there;
}

TEST_F(SchedulerTest, FullQueueIsResourceExhaustedAndQueuesNothing) {
  Scheduler scheduler(translator_, {.max_queue = 2});
  Outcomes outcomes(6);
  Parked parked;
  std::vector<SentenceJob> jobs;
  jobs.push_back(ParkingJob(&outcomes, 0, &parked));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  parked.entered.WaitForNotification();  // job 0 is live, the queue is empty and stays so

  auto make = [&](std::initializer_list<size_t> ids) {
    std::vector<SentenceJob> v;
    for (size_t i : ids) v.push_back(outcomes.Job(i, (*sources_)[i], Greedy(max_length_)));
    return v;
  };
  EXPECT_EQ(scheduler.Submit(make({3, 4, 5})).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(scheduler.stats().queued, 0);
  ASSERT_TRUE(scheduler.Submit(make({1, 2})).ok());  // nothing of the refused call took room
  EXPECT_EQ(scheduler.stats().queued, 2);
  EXPECT_EQ(scheduler.Submit(make({3})).code(), absl::StatusCode::kResourceExhausted);
  parked.release.Notify();

  ASSERT_TRUE(outcomes.WaitForAnswers(3));
  EXPECT_TRUE(scheduler.Shutdown(absl::Seconds(5)).ok());
  for (size_t i : {0, 1, 2}) {
    ExpectSameResult(outcomes.result(i), (*greedy_)[i], "sentence " + std::to_string(i));
    EXPECT_EQ(outcomes.answers(i), 1);
  }
  for (size_t i : {3, 4, 5}) EXPECT_EQ(outcomes.answers(i), 0) << "refused job " << i;
}

TEST_F(SchedulerTest, ShutdownAnswersLeftoversUnavailableAndRefusesNewWork) {
  Scheduler scheduler(translator_, {});
  Outcomes outcomes(5);
  Parked parked;
  std::vector<SentenceJob> jobs;
  jobs.push_back(ParkingJob(&outcomes, 0, &parked));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  parked.entered.WaitForNotification();
  jobs.clear();
  for (size_t i = 1; i < 4; ++i) jobs.push_back(outcomes.Job(i, (*sources_)[i], Beam(32)));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());

  std::thread stopper([&] { EXPECT_TRUE(scheduler.Shutdown(absl::ZeroDuration()).ok()); });
  // Once draining, Submit refuses (job 4 must never be answered).
  absl::Status refused;
  int accepted = 0;  // submissions that got in before the drain started
  for (int tries = 0; tries < 30000; ++tries) {
    jobs.clear();
    jobs.push_back(outcomes.Job(4, (*sources_)[4], Greedy(max_length_)));
    refused = scheduler.Submit(std::move(jobs));
    if (!refused.ok()) break;
    ++accepted;
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  parked.release.Notify();
  stopper.join();
  // Whatever got in before the drain started ends UNAVAILABLE too, each job once.
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(outcomes.result(i).status().code(), absl::StatusCode::kUnavailable) << i;
    EXPECT_EQ(outcomes.answers(i), 1) << i;
  }
  EXPECT_EQ(outcomes.answers(4), accepted);
  if (accepted > 0) {
    EXPECT_EQ(outcomes.result(4).status().code(), absl::StatusCode::kUnavailable);
  }
  jobs.clear();
  jobs.push_back(outcomes.Job(4, (*sources_)[4], Greedy(max_length_)));
  EXPECT_EQ(scheduler.Submit(std::move(jobs)).code(), absl::StatusCode::kUnavailable);
}

TEST_F(SchedulerTest, ShutdownLetsQueuedWorkFinishWithinTheTimeout) {
  Scheduler scheduler(translator_, {});
  Outcomes outcomes(4);
  Parked parked;
  std::vector<SentenceJob> jobs;
  jobs.push_back(ParkingJob(&outcomes, 0, &parked));
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  parked.entered.WaitForNotification();
  jobs.clear();
  for (size_t i = 1; i < 4; ++i) {
    jobs.push_back(outcomes.Job(i, (*sources_)[i], Greedy(max_length_)));
  }
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  std::thread stopper([&] { EXPECT_TRUE(scheduler.Shutdown(absl::InfiniteDuration()).ok()); });
  absl::SleepFor(absl::Milliseconds(20));
  parked.release.Notify();
  stopper.join();
  for (size_t i = 0; i < 4; ++i) {
    ExpectSameResult(outcomes.result(i), (*greedy_)[i], "sentence " + std::to_string(i));
    EXPECT_EQ(outcomes.answers(i), 1);
  }
}

// A pool with room for about one beam-4 sentence: admission waits, a full pool preempts (the
// restarted sentence gives the same output), and every job is answered exactly once.
class SchedulerTinyKvTest : public SchedulerTest {};

TEST_F(SchedulerTinyKvTest, EveryJobGetsItsResult) {
  const int64_t d_model = translator_->model().config.d_model;
  const int64_t block_bytes = 2 * kKvBlockPositions * d_model * sizeof(float);
  const int64_t pool_bytes = 40 * block_bytes;
  for (BatchingMode mode : {BatchingMode::kContinuous, BatchingMode::kStatic}) {
    SCOPED_TRACE(mode == BatchingMode::kContinuous ? "continuous" : "static");
    auto translator = NewTranslator(pool_bytes);
    ASSERT_TRUE(translator.ok()) << translator.status();
    Scheduler scheduler(translator->get(),
                        {.admission = {.mode = mode, .max_batch_sequences = 16}});
    struct MaxRows : Scheduler::Observer {
      void OnStep(int rows, double) override { max_rows = std::max(max_rows, rows); }
      int max_rows = 0;  // scheduler thread only; read after Shutdown
    } observer;
    scheduler.SetObserver(&observer);
    const size_t n = 24;
    Outcomes outcomes(n);
    std::vector<SentenceJob> jobs;
    for (size_t i = 0; i < n; ++i) {
      jobs.push_back(outcomes.Job(i, (*sources_)[i], Beam(max_length_)));
    }
    ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
    ASSERT_TRUE(outcomes.WaitForAnswers(n));
    for (size_t i = 0; i < n; ++i) {
      ExpectSameResult(outcomes.result(i), (*beam_)[i], "sentence " + std::to_string(i));
      EXPECT_EQ(outcomes.answers(i), 1);
    }
    EXPECT_TRUE(scheduler.Shutdown(absl::Seconds(5)).ok());
    // Admission kept to what fits: 3 sentences of 4 beams x 3 layers of headroom in 40 blocks.
    EXPECT_LE(observer.max_rows, 12);
    // Headroom covers the next block's worth of steps only: growing sentences still fill it.
    EXPECT_GT(scheduler.stats().preemptions, 0);
    std::cout << "preemptions: " << scheduler.stats().preemptions
              << ", most rows in a step: " << observer.max_rows << "\n";
    EXPECT_EQ(scheduler.stats().kv_cache_bytes, 0);
  }
}

TEST_F(SchedulerTest, KvCacheTooSmallForAnySentenceAnswersResourceExhausted) {
  auto translator = NewTranslator(1);  // one block: less than a sentence's first step
  ASSERT_TRUE(translator.ok()) << translator.status();
  Scheduler scheduler(translator->get(), {});
  const size_t n = 6;
  Outcomes outcomes(n);
  std::vector<SentenceJob> jobs;
  for (size_t i = 0; i < n; ++i) {
    jobs.push_back(outcomes.Job(i, (*sources_)[i], i % 2 ? Beam(32) : Greedy(32)));
  }
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n));
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(outcomes.result(i).status().code(), absl::StatusCode::kResourceExhausted) << i;
    EXPECT_EQ(outcomes.answers(i), 1);
  }
}

class CountingObserver : public Scheduler::Observer {
 public:
  void OnBatch(int sequences, int source_tokens, double padding_ratio, double) override {
    batches += 1;
    sequences_admitted += sequences;
    EXPECT_GT(source_tokens, 0);
    EXPECT_GE(padding_ratio, 0.0);
    EXPECT_LT(padding_ratio, 1.0);
  }
  void OnStep(int rows, double seconds) override {
    steps += 1;
    EXPECT_GT(rows, 0);
    EXPECT_GE(seconds, 0.0);
  }
  void OnQueueWait(double seconds) override {
    waits += 1;
    EXPECT_GE(seconds, 0.0);
  }
  void OnFirstToken(double seconds) override {
    first_tokens += 1;
    EXPECT_GE(seconds, 0.0);
  }
  // Only touched on the scheduler thread, read after Shutdown joined it.
  int batches = 0, sequences_admitted = 0, steps = 0, waits = 0, first_tokens = 0;
};

TEST_F(SchedulerTest, ObserverSeesEveryBatchStepAndJob) {
  Scheduler scheduler(translator_, {.admission = {.max_batch_sequences = 4}});
  CountingObserver observer;
  scheduler.SetObserver(&observer);
  const size_t n = 10;
  Outcomes outcomes(n);
  std::vector<SentenceJob> jobs;
  for (size_t i = 0; i < n; ++i) {
    jobs.push_back(outcomes.Job(i, (*sources_)[i], Greedy(max_length_)));
  }
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  ASSERT_TRUE(outcomes.WaitForAnswers(n));
  EXPECT_TRUE(scheduler.Shutdown(absl::Seconds(5)).ok());
  const Scheduler::Stats stats = scheduler.stats();
  EXPECT_EQ(observer.sequences_admitted, static_cast<int>(n));
  EXPECT_EQ(observer.waits, static_cast<int>(n));
  EXPECT_EQ(observer.first_tokens, static_cast<int>(n));
  EXPECT_EQ(observer.batches, stats.batches_admitted);
  EXPECT_EQ(observer.steps, stats.steps);
  EXPECT_GE(observer.batches, 3);  // at most 4 live sentences at a time
}

// A decoder step that does not return (a hung device, through the test hook): Shutdown gives
// up after the grace, answers every job it still holds UNAVAILABLE, once, and says where the
// loop is stuck. The stuck loop keeps using the scheduler, its translator and the jobs'
// callbacks for good, so all of them are leaked (reachable from statics).
TEST_F(SchedulerTest, ShutdownWithAStuckStepAnswersEveryJobUnavailableOnce) {
  for (size_t i : {0, 1}) ASSERT_GT((*greedy_)[i].hypotheses[0].ids.size(), 2u) << i;
  auto made = NewTranslator(0);
  ASSERT_TRUE(made.ok()) << made.status();
  static Translator* const translator = made->release();
  static absl::Notification* const reached = new absl::Notification;
  SchedulerOptions options;
  options.before_step_for_test = [](int64_t step) {
    if (step != 2) return;
    reached->Notify();
    for (;;) absl::SleepFor(absl::Hours(1));
  };
  static Scheduler* const scheduler = new Scheduler(translator, options);
  static Outcomes* const outcomes = new Outcomes(3);
  std::vector<SentenceJob> jobs;
  jobs.push_back(outcomes->Job(0, (*sources_)[0], Greedy(max_length_)));
  jobs.push_back(outcomes->Job(1, (*sources_)[1], Greedy(max_length_)));
  ASSERT_TRUE(scheduler->Submit(std::move(jobs)).ok());
  reached->WaitForNotification();
  jobs.clear();
  jobs.push_back(outcomes->Job(2, (*sources_)[2], Greedy(max_length_)));  // queued behind it
  ASSERT_TRUE(scheduler->Submit(std::move(jobs)).ok());

  const absl::Status stuck = scheduler->Shutdown(absl::Milliseconds(50), absl::Milliseconds(100));
  EXPECT_EQ(stuck.code(), absl::StatusCode::kDeadlineExceeded) << stuck;
  EXPECT_TRUE(absl::StrContains(stuck.message(), "decoder step 2 has been running for")) << stuck;
  EXPECT_TRUE(absl::StrContains(stuck.message(), "3 unanswered sentences")) << stuck;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(outcomes->answers(i), 1) << i;
    EXPECT_EQ(outcomes->result(i).status().code(), absl::StatusCode::kUnavailable) << i;
  }
  EXPECT_EQ(outcomes->progress(0), 1);  // step 1's
  EXPECT_EQ(outcomes->progress(2), 0);
  // Asked again: the same report at once, nobody answered twice, new work refused.
  EXPECT_EQ(scheduler->Shutdown(absl::ZeroDuration()), stuck);
  jobs.clear();
  jobs.push_back(outcomes->Job(2, (*sources_)[2], Greedy(max_length_)));
  EXPECT_EQ(scheduler->Submit(std::move(jobs)).code(), absl::StatusCode::kUnavailable);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(outcomes->answers(i), 1) << i;
}

// A step slower than the grace that returns after Shutdown answered its jobs: the loop goes on
// with jobs already answered, and their callbacks (whose callers may be gone) stay silent.
TEST_F(SchedulerTest, AStepReturningAfterShutdownGaveUpCallsNoAnsweredJobAgain) {
  for (size_t i : {0, 1}) ASSERT_GT((*greedy_)[i].hypotheses[0].ids.size(), 3u) << i;
  auto made = NewTranslator(0);
  ASSERT_TRUE(made.ok()) << made.status();
  // Leaked: the abandoned loop thread uses them after the test has looked away.
  static Translator* const translator = made->release();
  static absl::Notification* const reached = new absl::Notification;
  static absl::Notification* const release = new absl::Notification;
  SchedulerOptions options;
  options.before_step_for_test = [](int64_t step) {
    if (step != 2) return;
    reached->Notify();
    release->WaitForNotification();
  };
  static Scheduler* const scheduler = new Scheduler(translator, options);
  static Outcomes* const outcomes = new Outcomes(2);
  std::vector<SentenceJob> jobs;
  jobs.push_back(outcomes->Job(0, (*sources_)[0], Greedy(max_length_)));
  jobs.push_back(outcomes->Job(1, (*sources_)[1], Greedy(max_length_)));
  ASSERT_TRUE(scheduler->Submit(std::move(jobs)).ok());
  reached->WaitForNotification();
  EXPECT_FALSE(scheduler->Shutdown(absl::ZeroDuration(), absl::Milliseconds(50)).ok());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(outcomes->result(i).status().code(), absl::StatusCode::kUnavailable) << i;
  }

  release->Notify();
  // Step 2 completes (its stats are published after its retirements and progress), then the
  // draining loop clears its live sentences and ends.
  for (int i = 0; i < 30000; ++i) {
    const Scheduler::Stats stats = scheduler->stats();
    if (stats.steps == 2 && stats.active_sequences == 0) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(scheduler->stats().steps, 2);
  EXPECT_EQ(scheduler->stats().active_sequences, 0);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(outcomes->answers(i), 1) << i;
    EXPECT_EQ(outcomes->progress(i), 1) << i;  // step 1's only
  }
}

}  // namespace
}  // namespace transerve
