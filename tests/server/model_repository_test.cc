// The model repository (issue 19, docs/model-repository.md) driven as users drive it: the real
// transerve-server with --model_repository over directories of distinct random models
// (tests/testing/model_variants.h), gRPC callers, transerve.v1.Admin and /metrics.
//
// What a right answer is: what that model answers for the text alone, asked of the same server
// while it is otherwise idle (continuous batching is batch-invariant, so the answer under load
// must be the same ids, text and score). For a version not served yet, a second repository
// model holds the same files (one seed writes the same bytes) and is asked instead.
//
// The memory bound. The contract makes room before a load (the least recently used idle model
// is unloaded; a load waits for room) and refuses a model larger than the whole budget, so
// while no model is being reloaded the repository's resident bytes never exceed
// --model_memory_mb and the loaded models never exceed --max_loaded_models. Only a reload
// loads a second version beside the serving one; the mixed-load test has none, so it checks
// the plain bound (kReloadOverheadModels = 0) on every 100 ms sample of Admin ListModels.
//
// "Replacing a model's files": the new files are written in a staging directory outside the
// repository and renamed into the model's directory one by one, model.safetensors last
// (model_variants.h). Every state between two renames is a whole model, and the directory is
// never missing, so a poll never sees a removal; a poll between the renames may reload the old
// weights once more, which answers as the old version did.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/server/model_repository_client.h"
#include "tests/testing/model_variants.h"
#include "tests/testing/paths.h"
#include "transerve/v1/admin.grpc.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve::repository_test {
namespace {

// Loaded models beside the budget's while no reload runs: none (see the header comment).
constexpr int kReloadOverheadModels = 0;

class ModelRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = fs::temp_directory_path() /
            absl::StrCat("transerve_model_repository_", getpid(), "_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(work_);
    fs::create_directories(repo());
  }
  void TearDown() override {
    if (HasFailure()) {
      for (const auto& entry : fs::directory_iterator(work_)) {
        if (entry.path().extension() == ".log") {
          std::ifstream in(entry.path());
          std::stringstream s;
          s << in.rdbuf();
          const std::string text = s.str();
          std::cerr << "--- " << entry.path().filename() << " (last 4000 bytes)\n"
                    << text.substr(text.size() > 4000 ? text.size() - 4000 : 0) << "\n";
        }
      }
    }
    fs::remove_all(work_);
  }

  fs::path repo() const { return work_ / "repo"; }
  std::string RepositoryFlag() const { return "--model_repository=" + repo().string(); }
  void AddVariant(const std::string& name, uint32_t seed) {
    ASSERT_TRUE(testing::WriteModelVariant(testing::TinyFixtureModel(), repo() / name, seed).ok());
  }

  // One variant's resident bytes as the server reports them once loaded (for budgets).
  int64_t ProbeResidentBytes() {
    const fs::path probe_repo = work_ / "probe";
    fs::create_directories(probe_repo);
    EXPECT_TRUE(
        testing::WriteModelVariant(testing::TinyFixtureModel(), probe_repo / "probe", 1).ok());
    RepositoryServer server(
        work_, "probe",
        {"--model_repository=" + probe_repo.string(), std::string("--admin_token=") + kAdminToken});
    EXPECT_TRUE(server.serving()) << server.Log();
    if (!server.serving()) return 0;
    v1::ModelStatus status;
    grpc::Status s = server.Load("probe", &status);
    EXPECT_TRUE(s.ok()) << Describe(s);
    // Some work first, in case the KV cache grows with use.
    std::vector<Answer> unused;
    EXPECT_TRUE(Unary(server.translator(), Request("probe", Pool(), 4), &unused).ok());
    const int64_t bytes = server.Status("probe").value_or(v1::ModelStatus()).resident_bytes();
    EXPECT_GT(bytes, 0);
    EXPECT_EQ(server.Terminate(), 0);
    fs::remove_all(probe_repo);
    return bytes;
  }

  fs::path work_;
};

// --- a. six models, two at a time, 32 callers for 60 s -----------------------------------------

constexpr int kLoadCallers = 32;
constexpr auto kLoadDuration = std::chrono::seconds(60);
constexpr int kLoadModels = 6;

class ModelRepositoryLoadTest : public ModelRepositoryTest {};

TEST_F(ModelRepositoryLoadTest, SixModelsTwoLoadedMixedCallersGetTheirModelsAnswers) {
  const int64_t model_bytes = ProbeResidentBytes();
  ASSERT_GT(model_bytes, 0);
  // Room for two of them, not three.
  const double budget_mb = 2.5 * static_cast<double>(model_bytes) / (1024.0 * 1024.0);
  std::vector<std::string> models;
  for (int i = 0; i < kLoadModels; ++i) {
    models.push_back(absl::StrCat("m", i));
    AddVariant(models.back(), 100 + i);
  }
  RepositoryServer server(
      work_, "load",
      {RepositoryFlag(), "--max_loaded_models=2", absl::StrCat("--model_memory_mb=", budget_mb),
       std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();

  // The right answers, one model at a time (each model's calls together: one load each).
  const std::vector<std::string> texts = Pool();
  using Key = std::tuple<std::string, int, int>;  // model, text, beam
  std::map<Key, Answer> alone;
  for (const auto& model : models) {
    for (int beam : {1, 4}) {
      for (int t = 0; t < static_cast<int>(texts.size()); ++t) {
        Answer a;
        grpc::Status s = TranslateOne(server.translator(), model, texts[t], beam, &a);
        ASSERT_TRUE(s.ok()) << model << " " << Describe(s);
        alone[{model, t, beam}] = a;
      }
    }
  }
  int distinct = 0;
  for (int t = 0; t < static_cast<int>(texts.size()); ++t) {
    std::set<std::vector<int32_t>> answers;
    for (const auto& model : models) answers.insert(alone[Key(model, t, 1)].ids);
    distinct += answers.size() > 1;
  }
  EXPECT_GT(distinct, 0) << "the variants translate every text alike: routing is invisible";

  v1::AdminListModelsResponse first;
  ASSERT_TRUE(server.List(&first).ok());
  const int64_t budget_bytes = first.memory_budget_bytes();
  EXPECT_NEAR(static_cast<double>(budget_bytes), budget_mb * 1024 * 1024, 1024 * 1024);
  EXPECT_EQ(first.max_loaded_models(), 2);

  // The sampler: Admin ListModels every 100 ms while the callers run.
  std::atomic<bool> stop{false};
  int64_t most_resident = 0, most_resident_rows = 0, largest_model = 0;
  int most_loaded = 0, samples = 0, failed_samples = 0;
  // The process's resident set after the first quarter (every model loaded and freed several
  // times by then) and at its largest afterwards: thousands of loads and unloads must not
  // leave their weights behind.
  int64_t rss_settled = 0, rss_most_after = 0;
  const auto settled_at = Clock::now() + kLoadDuration / 4;
  std::thread sampler([&] {
    while (!stop.load()) {
      const int64_t rss = server.ResidentSetBytes();
      if (Clock::now() < settled_at) {
        rss_settled = rss;
      } else {
        rss_most_after = std::max(rss_most_after, rss);
      }
      v1::AdminListModelsResponse list;
      if (!server.List(&list).ok()) {
        ++failed_samples;
      } else {
        ++samples;
        int64_t rows = 0;
        int loaded = 0;
        for (const auto& m : list.models()) {
          rows += m.resident_bytes();
          largest_model = std::max(largest_model, m.resident_bytes());
          loaded += m.state() == v1::ModelStatus::LOADED;
        }
        most_resident = std::max(most_resident, list.resident_bytes());
        most_resident_rows = std::max(most_resident_rows, rows);
        most_loaded = std::max({most_loaded, loaded, list.loaded_models()});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  std::atomic<int> calls{0};
  std::vector<std::string> failures[kLoadCallers];
  std::vector<std::thread> callers;
  const auto until = Clock::now() + kLoadDuration;
  for (int c = 0; c < kLoadCallers; ++c) {
    callers.emplace_back([&, c] {
      std::mt19937 own(1900 + c);
      auto stub = server.NewTranslator();
      for (int k = 0; Clock::now() < until; ++k) {
        const std::string& model = models[own() % models.size()];
        const int beam = own() % 3 == 0 ? 4 : 1;
        const bool streaming = own() % 2 == 0;
        std::vector<int> picked(1 + own() % 3);
        std::vector<std::string> call_texts;
        for (int& p : picked) {
          p = static_cast<int>(own() % texts.size());
          call_texts.push_back(texts[p]);
        }
        std::vector<Answer> got;
        const auto req = Request(model, call_texts, beam);
        grpc::Status s = streaming ? Stream(stub.get(), req, &got) : Unary(stub.get(), req, &got);
        calls.fetch_add(1);
        const std::string what = absl::StrCat("caller ", c, " call ", k, " model ", model, " beam ",
                                              beam, streaming ? " stream" : " unary");
        if (!s.ok()) {
          failures[c].push_back(absl::StrCat(what, ": ", Describe(s)));
          continue;
        }
        if (got.size() != picked.size()) {
          failures[c].push_back(absl::StrCat(what, ": ", got.size(), " translations"));
          continue;
        }
        for (size_t i = 0; i < picked.size(); ++i) {
          const Answer& want = alone.at(Key(model, picked[i], beam));
          if (!(got[i] == want)) {
            failures[c].push_back(absl::StrCat(what, " text ", picked[i], ": got '", got[i].text,
                                               "' (", got[i].score, "), alone '", want.text, "' (",
                                               want.score, ")"));
          }
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  stop = true;
  sampler.join();

  int failed = 0;
  for (int c = 0; c < kLoadCallers; ++c) {
    failed += static_cast<int>(failures[c].size());
    for (size_t i = 0; i < std::min<size_t>(failures[c].size(), 3); ++i) {
      ADD_FAILURE() << failures[c][i];
    }
  }
  EXPECT_EQ(failed, 0) << "of " << calls.load() << " calls";
  EXPECT_GT(calls.load(), kLoadCallers);

  // The bound (header comment): the budget, plus nothing while no reload runs.
  EXPECT_GT(samples, 100);
  EXPECT_EQ(failed_samples, 0);
  EXPECT_GT(largest_model, 0);
  EXPECT_LE(most_resident, budget_bytes + kReloadOverheadModels * largest_model);
  EXPECT_LE(most_resident_rows, budget_bytes + kReloadOverheadModels * largest_model);
  EXPECT_LE(most_loaded, 2 + kReloadOverheadModels);
  EXPECT_GE(most_loaded, 1);
  // Freed versions give their memory back: no growth beyond allocator slack (a leaked version
  // per load would be gigabytes by the end).
  EXPECT_GT(rss_settled, 0);
  EXPECT_LE(rss_most_after, rss_settled + 64 * (int64_t{1} << 20))
      << "resident set " << rss_settled << " bytes after a quarter of the run, then up to "
      << rss_most_after;

  // Loads and unloads counted, the same in Admin and /metrics; every model in a settled state.
  // Leases settle moments after the last answers (see ReloadUnderLoad... below).
  v1::AdminListModelsResponse after;
  EXPECT_TRUE(WaitFor(std::chrono::seconds(10), [&] {
    if (!server.List(&after).ok()) return false;
    for (const auto& m : after.models()) {
      if (m.in_flight() != 0) return false;
    }
    return true;
  }));
  ASSERT_TRUE(server.List(&after).ok());
  ASSERT_EQ(after.models_size(), kLoadModels);
  int64_t loads = 0, unloads = 0;
  int loaded = 0;
  const std::string metrics = server.Metrics();
  ASSERT_FALSE(metrics.empty());
  for (const auto& m : after.models()) {
    SCOPED_TRACE(m.name());
    EXPECT_FALSE(m.pinned());
    EXPECT_TRUE(m.state() == v1::ModelStatus::LOADED || m.state() == v1::ModelStatus::UNLOADED)
        << v1::ModelStatus::State_Name(m.state());
    EXPECT_EQ(m.failed_loads(), 0);
    EXPECT_EQ(m.last_error(), "");
    EXPECT_EQ(m.in_flight(), 0);
    EXPECT_GE(m.loads(), 1);
    EXPECT_GT(m.last_used_unix_ms(), 0);
    EXPECT_EQ(m.resident_bytes() > 0, m.state() == v1::ModelStatus::LOADED);
    loads += m.loads();
    unloads += m.unloads();
    loaded += m.state() == v1::ModelStatus::LOADED;
    const std::string label = ModelLabel(m.name());
    EXPECT_EQ(MetricSum(metrics, "transerve_model_loads_total", {label, "result=\"ok\""}),
              m.loads());
    EXPECT_EQ(MetricSum(metrics, "transerve_model_loads_total", {label, "result=\"error\""}), 0);
    EXPECT_EQ(MetricSum(metrics, "transerve_model_unloads_total", {label}), m.unloads());
    EXPECT_EQ(MetricSum(metrics, "transerve_model_loaded", {label}),
              m.state() == v1::ModelStatus::LOADED ? 1 : 0);
    EXPECT_EQ(MetricSum(metrics, "transerve_model_resident_bytes", {label}), m.resident_bytes());
    EXPECT_GT(MetricSum(metrics, "transerve_model_last_use_timestamp_seconds", {label}), 1.7e9);
    EXPECT_EQ(MetricSum(metrics, "transerve_model_load_seconds_count", {label}), m.loads());
  }
  EXPECT_GT(loads, kLoadModels);
  EXPECT_GT(unloads, 0);
  EXPECT_GT(MetricSum(metrics, "transerve_model_unloads_total", {"reason=\"budget\""}), 0);
  EXPECT_LE(loaded, 2);
  EXPECT_EQ(after.loaded_models(), loaded);
  EXPECT_EQ(MetricSum(metrics, "transerve_model_repository_budget_bytes"), budget_bytes);
  EXPECT_EQ(MetricSum(metrics, "transerve_model_repository_resident_bytes"),
            after.resident_bytes());
  std::cerr << calls.load() << " calls; " << loads << " loads, " << unloads
            << " unloads; most resident " << most_resident << " of " << budget_bytes << " bytes in "
            << samples << " samples; process resident set " << rss_settled << " then at most "
            << rss_most_after << " bytes\n";

  EXPECT_EQ(server.Terminate(), 0) << server.Log();
}

// --- b. reloads under load ---------------------------------------------------------------------

// Callers on one model, each recording when its call started and what came back.
class Callers {
 public:
  Callers(RepositoryServer* server, const std::string& model, int n, int beam)
      : server_(server), model_(model), beam_(beam), texts_(Pool()) {
    for (int c = 0; c < n; ++c) {
      threads_.emplace_back([this, c] { Run(c); });
    }
  }
  ~Callers() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  struct Call {
    Clock::time_point started;
    int text = 0;
    grpc::Status status;
    Answer answer;
  };
  const std::vector<Call>& calls() const { return calls_; }
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  void Run(int c) {
    std::mt19937 own(500 + c);
    auto stub = server_->NewTranslator();
    while (!stop_) {
      Call call;
      call.started = Clock::now();
      call.text = static_cast<int>(own() % texts_.size());
      std::vector<Answer> got;
      const auto req = Request(model_, {texts_[call.text]}, beam_);
      call.status = own() % 2 == 0 ? Stream(stub.get(), req, &got) : Unary(stub.get(), req, &got);
      if (call.status.ok() && got.size() != 1) {
        call.status = grpc::Status(grpc::StatusCode::INTERNAL, "not one translation");
      }
      if (call.status.ok()) call.answer = got[0];
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(std::move(call));
    }
  }

  RepositoryServer* server_;
  std::string model_;
  int beam_;
  std::vector<std::string> texts_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Call> calls_;
  std::vector<std::thread> threads_;
};

// Each pool text's answer from `model`, asked alone.
std::vector<Answer> AnswersAlone(RepositoryServer* server, const std::string& model, int beam) {
  std::vector<Answer> answers;
  for (const auto& text : Pool()) {
    Answer a;
    grpc::Status s = TranslateOne(server->translator(), model, text, beam, &a);
    EXPECT_TRUE(s.ok()) << model << " " << Describe(s);
    answers.push_back(a);
  }
  return answers;
}

int CountDifferent(const std::vector<Answer>& a, const std::vector<Answer>& b) {
  int n = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += !(a[i] == b[i]);
  return n;
}

TEST_F(ModelRepositoryTest, ReloadUnderLoadSwitchesAnswersWithoutAFailedCall) {
  AddVariant("m", 200);
  AddVariant("next", 201);  // the files "m" gets later, served alone for its right answers
  RepositoryServer server(
      work_, "reload",
      {RepositoryFlag(), "--preload=m", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  const std::vector<Answer> old_answers = AnswersAlone(&server, "m", 1);
  const std::vector<Answer> new_answers = AnswersAlone(&server, "next", 1);
  ASSERT_GT(CountDifferent(old_answers, new_answers), 0);

  Callers callers(&server, "m", 16, 1);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(testing::WriteModelVariant(testing::TinyFixtureModel(), repo() / "m", 201).ok());
  // The switch: the first call that answers the new version (probing the texts that differ).
  std::optional<Clock::time_point> switched;
  ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
    for (size_t t = 0; t < old_answers.size(); ++t) {
      if (old_answers[t] == new_answers[t]) continue;
      Answer a;
      grpc::Status s = TranslateOne(server.translator(), "m", Pool()[t], 1, &a);
      EXPECT_TRUE(s.ok()) << Describe(s);
      if (a == new_answers[t]) switched = Clock::now();
      break;
    }
    return switched.has_value();
  })) << "the new files were never served";
  std::this_thread::sleep_for(std::chrono::seconds(2));

  // Five reloads through Admin, each one more version of the same files.
  auto before = server.Status("m");
  ASSERT_TRUE(before.has_value());
  int64_t version = before->version();
  EXPECT_GE(version, 2);
  for (int i = 0; i < 5; ++i) {
    v1::ModelStatus status;
    grpc::Status s = server.Reload("m", &status);
    ASSERT_TRUE(s.ok()) << Describe(s);
    EXPECT_EQ(status.state(), v1::ModelStatus::LOADED);
    EXPECT_EQ(status.version(), version + 1);
    EXPECT_EQ(status.last_error(), "");
    version = status.version();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  callers.Stop();

  int old_seen = 0, new_seen = 0, failed = 0;
  for (const auto& call : callers.calls()) {
    if (!call.status.ok()) {
      if (++failed <= 5) ADD_FAILURE() << "text " << call.text << ": " << Describe(call.status);
      continue;
    }
    const bool is_old = call.answer == old_answers[call.text];
    const bool is_new = call.answer == new_answers[call.text];
    old_seen += is_old && !is_new;
    new_seen += is_new && !is_old;
    EXPECT_TRUE(is_old || is_new) << "text " << call.text << ": '" << call.answer.text << "'";
    if (call.started > *switched) {
      EXPECT_TRUE(is_new) << "a call started after the switch answered '" << call.answer.text
                          << "'";
    }
  }
  EXPECT_EQ(failed, 0) << "of " << callers.calls().size();
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);

  const std::string metrics = server.Metrics();
  EXPECT_GE(
      MetricSum(metrics, "transerve_model_unloads_total", {ModelLabel("m"), "reason=\"reload\""}),
      6);
  EXPECT_EQ(
      MetricSum(metrics, "transerve_model_loads_total", {ModelLabel("m"), "result=\"error\""}), 0);
  // A call's lease goes when the server finishes with the call, which can be just after its
  // caller read the answer: settled within moments, not at once.
  std::optional<v1::ModelStatus> after;
  EXPECT_TRUE(WaitFor(std::chrono::seconds(10),
                      [&] {
                        after = server.Status("m");
                        return after.has_value() && after->in_flight() == 0;
                      }))
      << "calls still counted in flight: " << (after ? after->in_flight() : -1);
  ASSERT_TRUE(after.has_value());
  EXPECT_FALSE(after->reloading());
  EXPECT_EQ(server.Terminate(), 0);
}

// --- c. a broken version keeps the old one -----------------------------------------------------

TEST_F(ModelRepositoryTest, ABrokenReloadKeepsTheOldVersionServing) {
  AddVariant("m", 300);
  AddVariant("next", 301);
  RepositoryServer server(
      work_, "broken",
      {RepositoryFlag(), "--preload=m", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  const std::vector<Answer> old_answers = AnswersAlone(&server, "m", 1);
  const std::vector<Answer> new_answers = AnswersAlone(&server, "next", 1);
  ASSERT_GT(CountDifferent(old_answers, new_answers), 0);

  {
    Callers callers(&server, "m", 4, 1);
    const size_t log_before = server.Log().size();
    ASSERT_TRUE(testing::WriteBrokenModel(testing::TinyFixtureModel(), repo() / "m").ok());
    ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
      auto m = server.Status("m");
      return m.has_value() && !m->last_error().empty();
    })) << "no failed load of the broken files reported";
    auto m = server.Status("m");
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->state(), v1::ModelStatus::LOADED);
    // 1, or 2 when a poll caught the renames half done (the old weights loaded once more).
    EXPECT_LE(m->version(), 2);
    EXPECT_GE(m->failed_loads(), 1);
    EXPECT_GT(m->resident_bytes(), 0);
    const std::string new_log = absl::AsciiStrToLower(server.Log().substr(log_before));
    EXPECT_TRUE(absl::StrContains(new_log, "fail") || absl::StrContains(new_log, "error"))
        << "no log line for the failed load: " << new_log;

    v1::ModelStatus status;
    grpc::Status s = server.Reload("m", &status);
    EXPECT_FALSE(s.ok());
    EXPECT_FALSE(s.error_message().empty());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    callers.Stop();
    int failed = 0;
    for (const auto& call : callers.calls()) {
      if (!call.status.ok()) {
        if (++failed <= 5) ADD_FAILURE() << Describe(call.status);
        continue;
      }
      EXPECT_EQ(call.answer, old_answers[call.text]) << "'" << call.answer.text << "'";
    }
    EXPECT_EQ(failed, 0);
    EXPECT_GT(callers.calls().size(), 0u);
  }
  const std::string metrics = server.Metrics();
  EXPECT_GT(
      MetricSum(metrics, "transerve_model_loads_total", {ModelLabel("m"), "result=\"error\""}), 0);
  EXPECT_EQ(MetricSum(metrics, "transerve_model_loaded", {ModelLabel("m")}), 1);

  // Whole files again: the next version loads and the error is cleared.
  ASSERT_TRUE(testing::WriteModelVariant(testing::TinyFixtureModel(), repo() / "m", 301).ok());
  ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
    return CountDifferent(AnswersAlone(&server, "m", 1), new_answers) == 0;
  })) << "the whole new version was never served";
  auto m = server.Status("m");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->last_error(), "");
  EXPECT_GE(m->version(), 2);
  EXPECT_EQ(server.Terminate(), 0);
}

// --- d. removal while requests are queued -----------------------------------------------------

TEST_F(ModelRepositoryTest, RemovalFinishesQueuedWorkThenAnswersNotFound) {
  AddVariant("m", 400);
  AddVariant("other", 401);
  // One sentence decoded at a time: the long beam searches below queue (about 2.5 s of work on
  // a 2-core machine, against a 200 ms poll; a minute in a sanitized build, which the queue's
  // time budget allows: an answer other than OK is then the removal's, not the queue's).
  RepositoryServer server(
      work_, "removal",
      {RepositoryFlag(), "--preload=m,other", "--max_batch_sequences=1", "--max_queue=4096",
       "--max_queue_wait=600s", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  constexpr int kBeam = 4, kLongLength = 128, kCalls = 24, kTextsPerCall = 16;
  const std::vector<std::string> texts = Pool();
  std::vector<Answer> alone;
  for (const auto& text : texts) {
    std::vector<Answer> got;
    grpc::Status s = Unary(server.translator(), Request("m", {text}, kBeam, kLongLength), &got);
    ASSERT_TRUE(s.ok()) << Describe(s);
    alone.push_back(got.at(0));
  }

  std::atomic<int> outstanding{kCalls};
  std::vector<std::string> failures(kCalls);
  std::vector<std::thread> calls;
  // Joined however the test body ends (an ASSERT below returns early).
  struct JoinAll {
    std::vector<std::thread>& threads;
    ~JoinAll() {
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join_all{calls};
  for (int c = 0; c < kCalls; ++c) {
    calls.emplace_back([&, c] {
      auto stub = server.NewTranslator();
      std::vector<int> picked;
      std::vector<std::string> call_texts;
      for (int i = 0; i < kTextsPerCall; ++i) {
        picked.push_back((c * kTextsPerCall + i) % static_cast<int>(texts.size()));
        call_texts.push_back(texts[picked.back()]);
      }
      std::vector<Answer> got;
      grpc::Status s = Unary(stub.get(), Request("m", call_texts, kBeam, kLongLength), &got);
      outstanding.fetch_sub(1);
      if (!s.ok()) {
        failures[c] = Describe(s);
        return;
      }
      if (got.size() != static_cast<size_t>(kTextsPerCall)) {
        failures[c] = absl::StrCat(got.size(), " translations");
        return;
      }
      for (int i = 0; i < kTextsPerCall; ++i) {
        if (!(got[i] == alone[picked[i]])) failures[c] = absl::StrCat("text ", i, " differs");
      }
    });
  }
  // Removed once the server holds every call (in flight, or already answered): a call that
  // reached it only after the removal is rightly NOT_FOUND, and on a loaded machine some
  // threads start late (CI-like runs saw call 20 arrive after it when this waited for half).
  ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
    auto m = server.Status("m");
    return m.has_value() && m->in_flight() + (kCalls - outstanding.load()) >= kCalls;
  }));
  ASSERT_TRUE(testing::RemoveModelDirectory(repo() / "m").ok());
  // Gone from the list (new requests NOT_FOUND) while its work may still run.
  ASSERT_TRUE(WaitFor(std::chrono::seconds(30), [&] { return !server.Status("m").has_value(); }));
  const int outstanding_when_gone = outstanding.load();
  Answer a;
  grpc::Status s = TranslateOne(server.translator(), "m", texts[0], 1, &a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << Describe(s);
  for (auto& t : calls) t.join();
  for (int c = 0; c < kCalls; ++c) EXPECT_EQ(failures[c], "") << "call " << c;
  // Work in flight finished: nothing of the removed model is left resident.
  v1::AdminListModelsResponse list;
  ASSERT_TRUE(server.List(&list).ok());
  EXPECT_EQ(list.models_size(), 1);
  // The test is only worth its name if the removal met work still queued or running.
  EXPECT_GT(outstanding_when_gone, 0);

  s = TranslateOne(server.translator(), "m", texts[0], 1, &a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << Describe(s);
  EXPECT_EQ(server.ListedLoaded("m"), std::nullopt);
  // NOT_SERVING, or NOT_FOUND for a name the health service no longer knows.
  EXPECT_NE(server.Health("transerve.v1.Translator/m"), "SERVING");
  EXPECT_TRUE(TranslateOne(server.translator(), "other", texts[0], 1, &a).ok());
  EXPECT_GT(MetricSum(server.Metrics(), "transerve_model_unloads_total",
                      {ModelLabel("m"), "reason=\"removed\""}),
            0);
  EXPECT_EQ(server.Terminate(), 0);
}

// --- e. on-demand loading, health, admin rules, budget ---------------------------------------

TEST_F(ModelRepositoryTest, FirstRequestsShareOneLoadAndHealthFollowsIt) {
  AddVariant("a", 500);
  AddVariant("b", 501);
  AddVariant("warm", 502);
  RepositoryServer server(
      work_, "on_demand",
      {RepositoryFlag(), "--preload=warm", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  const std::string health = "transerve.v1.Translator/";

  // Preloaded before SERVING; the others known but not loaded.
  EXPECT_EQ(server.ListedLoaded("warm"), true);
  EXPECT_EQ(server.ListedLoaded("a"), false);
  EXPECT_EQ(server.ListedLoaded("b"), false);
  EXPECT_EQ(server.Health(health + "warm"), "SERVING");
  EXPECT_EQ(server.Health(health + "a"), "NOT_SERVING");
  EXPECT_EQ(server.Health(""), "SERVING");
  auto a_before = server.Status("a");
  ASSERT_TRUE(a_before.has_value());
  EXPECT_EQ(a_before->state(), v1::ModelStatus::UNLOADED);
  EXPECT_EQ(a_before->loads(), 0);
  EXPECT_EQ(a_before->resident_bytes(), 0);
  EXPECT_EQ(server.Status("warm").value_or(v1::ModelStatus()).state(), v1::ModelStatus::LOADED);

  // Eight first requests at once: all answered alike, one load.
  constexpr int kFirst = 8;
  std::vector<Answer> answers(kFirst);
  std::vector<grpc::Status> statuses(kFirst);
  std::vector<std::thread> first;
  std::latch start(kFirst);  // sent together, so that they meet one load
  for (int i = 0; i < kFirst; ++i) {
    first.emplace_back([&, i] {
      auto stub = server.NewTranslator();
      start.arrive_and_wait();
      statuses[i] = TranslateOne(stub.get(), "a", Pool()[i % 2], 1, &answers[i]);
    });
  }
  for (auto& t : first) t.join();
  for (int i = 0; i < kFirst; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << Describe(statuses[i]);
    EXPECT_EQ(answers[i], answers[i % 2]);
  }
  auto a_after = server.Status("a");
  ASSERT_TRUE(a_after.has_value());
  EXPECT_EQ(a_after->loads(), 1);
  EXPECT_EQ(a_after->state(), v1::ModelStatus::LOADED);
  EXPECT_EQ(a_after->version(), 1);
  EXPECT_GT(a_after->load_seconds(), 0);
  EXPECT_EQ(MetricSum(server.Metrics(), "transerve_model_loads_total",
                      {ModelLabel("a"), "result=\"ok\""}),
            1);
  EXPECT_EQ(server.Health(health + "a"), "SERVING");
  EXPECT_EQ(server.ListedLoaded("a"), true);
  EXPECT_EQ(server.ListedLoaded("b"), false);

  // Unloaded through Admin: NOT_SERVING again, and the next request loads it again.
  v1::ModelStatus status;
  ASSERT_TRUE(server.Unload("a", &status).ok());
  EXPECT_TRUE(WaitFor(std::chrono::seconds(30), [&] {
    return server.Status("a").value_or(v1::ModelStatus()).state() == v1::ModelStatus::UNLOADED;
  }));
  EXPECT_EQ(server.Health(health + "a"), "NOT_SERVING");
  EXPECT_EQ(server.ListedLoaded("a"), false);
  Answer again;
  ASSERT_TRUE(TranslateOne(server.translator(), "a", Pool()[0], 1, &again).ok());
  EXPECT_EQ(again, answers[0]);
  EXPECT_EQ(server.Status("a").value_or(v1::ModelStatus()).loads(), 2);
  EXPECT_EQ(MetricSum(server.Metrics(), "transerve_model_unloads_total",
                      {ModelLabel("a"), "reason=\"admin\""}),
            1);

  // Admin LoadModel answers once it serves.
  ASSERT_TRUE(server.Load("b", &status).ok());
  EXPECT_EQ(status.state(), v1::ModelStatus::LOADED);
  EXPECT_EQ(server.Health(health + "b"), "SERVING");

  // Unknown names.
  Answer none;
  EXPECT_EQ(TranslateOne(server.translator(), "nope", Pool()[0], 1, &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(server.Load("nope", &status).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST_F(ModelRepositoryTest, AdminNeedsAnAdminToken) {
  AddVariant("a", 600);
  v1::AdminListModelsResponse list;
  {
    // No admin token configured: refused, whatever is sent.
    RepositoryServer server(work_, "no_admin", {RepositoryFlag()});
    ASSERT_TRUE(server.serving()) << server.Log();
    EXPECT_EQ(server.List(&list, "").error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(server.List(&list, kAdminToken).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    v1::ModelStatus status;
    EXPECT_FALSE(server.Load("a", &status).ok());
    EXPECT_EQ(server.Terminate(), 0);
  }
  const fs::path tokens = work_ / "admin_tokens";
  {
    std::ofstream out(tokens);
    out << "second-admin-token\n";
  }
  RepositoryServer server(
      work_, "admin",
      {RepositoryFlag(), "--auth_token=user-1", std::string("--admin_token=") + kAdminToken,
       "--admin_tokens_file=" + tokens.string()});
  ASSERT_TRUE(server.serving()) << server.Log();
  EXPECT_EQ(server.List(&list, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A Translator token is not an admin token.
  EXPECT_EQ(server.List(&list, "user-1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(server.List(&list, "").ok());
  EXPECT_TRUE(server.List(&list, kAdminToken).ok());
  EXPECT_TRUE(server.List(&list, "second-admin-token").ok());
  EXPECT_EQ(list.models_size(), 1);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST_F(ModelRepositoryTest, ModelDirModelsArePinned) {
  AddVariant("a", 700);
  const fs::path pinned = work_ / "pinned";
  fs::create_directory_symlink(testing::TinyFixtureModel(), pinned);
  RepositoryServer server(work_, "pinned",
                          {RepositoryFlag(), "--model_dir=" + pinned.string(),
                           std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  auto p = server.Status("pinned");
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->pinned());
  EXPECT_EQ(p->state(), v1::ModelStatus::LOADED);
  EXPECT_FALSE(server.Status("a").value_or(v1::ModelStatus()).pinned());
  v1::ModelStatus status;
  grpc::Status s = server.Unload("pinned", &status);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << Describe(s);
  EXPECT_EQ(server.Status("pinned").value_or(v1::ModelStatus()).state(), v1::ModelStatus::LOADED);
  // The --model_dir model is the default and serves beside the repository's.
  Answer answer;
  EXPECT_TRUE(TranslateOne(server.translator(), "pinned", Pool()[1], 1, &answer).ok());
  EXPECT_TRUE(TranslateOne(server.translator(), "a", Pool()[1], 1, &answer).ok());
  EXPECT_EQ(server.Terminate(), 0);
}

TEST_F(ModelRepositoryTest, AModelLargerThanTheBudgetIsRefusedWithTheReason) {
  const int64_t model_bytes = ProbeResidentBytes();
  ASSERT_GT(model_bytes, 0);
  AddVariant("a", 800);
  RepositoryServer server(
      work_, "small_budget",
      {RepositoryFlag(),
       absl::StrCat("--model_memory_mb=", 0.5 * static_cast<double>(model_bytes) / (1 << 20)),
       std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  Answer answer;
  const auto started = Clock::now();
  grpc::Status s = TranslateOne(server.translator(), "a", Pool()[0], 1, &answer);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << Describe(s);
  EXPECT_FALSE(s.error_message().empty());
  // At once: not after waiting for room that can never come.
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(30));
  v1::ModelStatus status;
  s = server.Load("a", &status);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << Describe(s);
  EXPECT_EQ(server.Status("a").value_or(v1::ModelStatus()).resident_bytes(), 0);
  EXPECT_EQ(server.Terminate(), 0);
}

// --- OPUS-MT directories as published: pytorch_model.bin only ---------------------------------

// Directories that hold only pytorch_model.bin (torch.save's zip archive, and the legacy stream
// of 2020's conversions) are models of the repository like any other, loaded on demand, and
// answer what their safetensors twins answer.
TEST_F(ModelRepositoryTest, PytorchOnlyDirectoriesServeLikeTheirSafetensorsTwins) {
  const fs::path fixtures = fs::path(testing::SourceDir()) / "tests" / "fixtures";
  struct Twin {
    std::string name;
    fs::path model;  // the safetensors directory
    fs::path bin;    // its pytorch_model.bin
  };
  const std::vector<Twin> twins = {
      {"zip", fixtures / "tiny-marian" / "model", fixtures / "pytorch" / "tiny-marian.zip.bin"},
      {"legacy", fixtures / "tiny-marian-variant" / "model",
       fixtures / "pytorch" / "tiny-marian-variant.legacy.bin"}};
  for (const Twin& t : twins) {
    const fs::path bin_dir = repo() / (t.name + "-bin");
    fs::create_directories(bin_dir);
    for (const auto& f : fs::directory_iterator(t.model)) {
      if (f.path().filename() != "model.safetensors")
        fs::copy(f.path(), bin_dir / f.path().filename());
    }
    fs::copy(t.bin, bin_dir / "pytorch_model.bin");
    fs::copy(t.model, repo() / (t.name + "-safetensors"), fs::copy_options::recursive);
  }
  RepositoryServer server(work_, "pytorch",
                          {RepositoryFlag(), std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  for (const Twin& t : twins) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(server.Status(t.name + "-bin").value_or(v1::ModelStatus()).state(),
              v1::ModelStatus::UNLOADED);
    for (int beam : {1, 4}) {
      for (size_t i = 0; i < 6; ++i) {
        Answer from_bin, from_safetensors;
        grpc::Status s =
            TranslateOne(server.translator(), t.name + "-bin", Pool()[i], beam, &from_bin);
        ASSERT_TRUE(s.ok()) << Describe(s) << server.Log();
        s = TranslateOne(server.translator(), t.name + "-safetensors", Pool()[i], beam,
                         &from_safetensors);
        ASSERT_TRUE(s.ok()) << Describe(s);
        EXPECT_TRUE(from_bin == from_safetensors)
            << "'" << from_bin.text << "' against '" << from_safetensors.text << "'";
      }
    }
    const auto status = server.Status(t.name + "-bin");
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(status->state(), v1::ModelStatus::LOADED);
    EXPECT_GT(status->resident_bytes(), 0);
  }
  EXPECT_NE(server.Log().find("from pytorch_model.bin"), std::string::npos);
  EXPECT_EQ(server.Terminate(), 0);
}

// SIGHUP reloads every loaded repository model (a new version, the same answers) and leaves the
// others unloaded; the calls made meanwhile all succeed.
TEST_F(ModelRepositoryTest, SighupReloadsTheLoadedModels) {
  AddVariant("loaded", 910);
  AddVariant("idle", 911);
  RepositoryServer server(
      work_, "sighup",
      {RepositoryFlag(), "--preload=loaded", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  Answer before;
  ASSERT_TRUE(TranslateOne(server.translator(), "loaded", Pool()[2], 1, &before).ok());
  ASSERT_EQ(server.Status("loaded").value_or(v1::ModelStatus()).version(), 1);
  server.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
    Answer a;
    EXPECT_TRUE(TranslateOne(server.translator(), "loaded", Pool()[2], 1, &a).ok());
    EXPECT_TRUE(a == before);
    return server.Status("loaded").value_or(v1::ModelStatus()).version() == 2;
  })) << server.Log();
  EXPECT_EQ(server.Status("idle").value_or(v1::ModelStatus()).state(), v1::ModelStatus::UNLOADED);
  EXPECT_NE(server.Log().find("SIGHUP"), std::string::npos);
  EXPECT_EQ(server.Terminate(), 0);
}

// --- f. loads side by side (--model_load_threads) ---------------------------------------------

// What the server's log says about loads (docs/model-repository.md, Metrics): each load's start
// ("model 'M': loading from D (K of N loaders busy)"), its end ("model 'M' loaded from D ..."),
// a failure, and (at --log_level=debug) each version's freeing. The log's clock has milliseconds.
struct LoadEvent {
  enum Kind { kStart, kLoaded, kFailed, kFreed };
  Kind kind = kStart;
  int64_t ms = 0;
  std::string model;
  int busy = 0;  // kStart: the loads running as it started, itself included
};

std::vector<LoadEvent> LoadEvents(const std::string& log) {
  std::vector<LoadEvent> events;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
    const std::string head(line.substr(0, 23));
    if (std::sscanf(head.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &y, &mo, &d, &h, &mi, &sec, &ms) !=
        7) {
      continue;
    }
    const size_t at = line.find("model '");
    if (at == absl::string_view::npos) continue;
    const size_t name_end = line.find('\'', at + 7);
    if (name_end == absl::string_view::npos) continue;
    LoadEvent e;
    e.model = std::string(line.substr(at + 7, name_end - at - 7));
    const absl::string_view rest = line.substr(name_end + 1);
    if (absl::StartsWith(rest, ": loading from ") ||
        absl::StartsWith(rest, ": loading a new version from ")) {
      e.kind = LoadEvent::kStart;
      const size_t open = rest.rfind('(');
      if (open == absl::string_view::npos ||
          std::sscanf(std::string(rest.substr(open)).c_str(), "(%d of", &e.busy) != 1) {
        continue;
      }
    } else if (absl::StartsWith(rest, " loaded from ")) {
      e.kind = LoadEvent::kLoaded;
    } else if (absl::StartsWith(rest, ": load failed") ||
               absl::StartsWith(rest, ": reload failed")) {
      e.kind = LoadEvent::kFailed;
    } else if (absl::StartsWith(rest, " version ") && absl::EndsWith(rest, " freed")) {
      e.kind = LoadEvent::kFreed;
    } else {
      continue;
    }
    const auto day = std::chrono::sys_days(std::chrono::year(y) / mo / d);
    e.ms = day.time_since_epoch().count() * int64_t{86400000} +
           ((h * 60 + mi) * 60 + sec) * int64_t{1000} + ms;
    events.push_back(std::move(e));
  }
  return events;
}

struct LoadSpan {
  std::string model;
  int64_t start_ms = 0, end_ms = 0;
};

// What the events say: each load's span, the loads of one model that overlapped (the repository
// must never run two), and the most versions held at once, a version counted from its load's
// start to its freeing (or its load's failure). The log's lines are in the order they were
// written, which is the order of any two events one of which waited for the other.
struct LoadHistory {
  std::vector<LoadSpan> spans;
  std::vector<std::string> same_model_overlaps;
  int most_held = 0;
  int most_busy = 0;
  int starts = 0;
};

LoadHistory HistoryOf(const std::vector<LoadEvent>& events) {
  LoadHistory h;
  std::map<std::string, int64_t> open;  // model -> its running load's start
  int held = 0;
  for (const LoadEvent& e : events) {
    switch (e.kind) {
      case LoadEvent::kStart:
        ++h.starts;
        h.most_busy = std::max(h.most_busy, e.busy);
        if (open.contains(e.model)) {
          h.same_model_overlaps.push_back(absl::StrCat(e.model, " at ", e.ms));
        }
        open[e.model] = e.ms;
        h.most_held = std::max(h.most_held, ++held);
        break;
      case LoadEvent::kLoaded:
      case LoadEvent::kFailed:
        if (auto it = open.find(e.model); it != open.end()) {
          h.spans.push_back({e.model, it->second, e.ms});
          open.erase(it);
        }
        if (e.kind == LoadEvent::kFailed) --held;
        break;
      case LoadEvent::kFreed:
        --held;
        break;
    }
  }
  return h;
}

// Pairs of loads of different models that ran at the same time: one started before the other
// ended, strictly (one loader thread never gives that, even on the same millisecond).
int OverlappingPairs(const std::vector<LoadSpan>& spans) {
  int pairs = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      const LoadSpan& a = spans[i];
      const LoadSpan& b = spans[j];
      pairs += a.model != b.model && a.start_ms < b.end_ms && b.start_ms < a.end_ms;
    }
  }
  return pairs;
}

// A seed for this run's random models, texts and timings (printed, to run a failure again).
uint32_t DrawSeed() {
  const uint32_t seed = std::random_device{}();
  std::cerr << "seed " << seed << "\n";
  return seed;
}

// One first call of a burst: what it asked and what came back.
struct BurstCall {
  BurstCall(std::string m, int t, int b) : model(std::move(m)), text(t), beam(b) {}
  std::string model;
  int text = 0;
  int beam = 1;
  grpc::Status status;
  Answer answer;
};

// Sends every call of `calls` at once (one thread each, released together).
void SendTogether(RepositoryServer* server, std::vector<BurstCall>* calls) {
  std::latch start(static_cast<std::ptrdiff_t>(calls->size()));
  std::vector<std::thread> threads;
  const std::vector<std::string> texts = Pool();
  for (BurstCall& call : *calls) {
    threads.emplace_back([&] {
      auto stub = server->NewTranslator();
      start.arrive_and_wait();
      call.status = TranslateOne(stub.get(), call.model, texts[call.text], call.beam, &call.answer);
    });
  }
  for (auto& t : threads) t.join();
}

// Every call answered OK with its model's own answer, asked again alone once the server is idle.
void ExpectAnswersAlone(RepositoryServer* server, const std::vector<BurstCall>& calls) {
  std::map<std::tuple<std::string, int, int>, Answer> alone;
  int failed = 0;
  for (const BurstCall& call : calls) {
    if (!call.status.ok()) {
      if (++failed <= 5) ADD_FAILURE() << call.model << ": " << Describe(call.status);
      continue;
    }
    const auto key = std::make_tuple(call.model, call.text, call.beam);
    if (!alone.contains(key)) {
      Answer a;
      grpc::Status s =
          TranslateOne(server->translator(), call.model, Pool()[call.text], call.beam, &a);
      ASSERT_TRUE(s.ok()) << Describe(s);
      alone[key] = a;
    }
    EXPECT_EQ(call.answer, alone[key])
        << call.model << " text " << call.text << " beam " << call.beam << ": '" << call.answer.text
        << "', alone '" << alone[key].text << "'";
  }
  EXPECT_EQ(failed, 0) << "of " << calls.size();
}

// Admin ListModels every 10 ms while it lives: the most resident bytes and loaded models seen.
class BudgetSampler {
 public:
  explicit BudgetSampler(RepositoryServer* server)
      : thread_([this, server] {
          while (!stop_.load()) {
            v1::AdminListModelsResponse list;
            if (server->List(&list).ok()) {
              ++samples_;
              most_resident_ = std::max(most_resident_, list.resident_bytes());
              most_loaded_ = std::max(most_loaded_, list.loaded_models());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }) {}
  ~BudgetSampler() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int samples() const { return samples_; }
  int64_t most_resident() const { return most_resident_; }
  int most_loaded() const { return most_loaded_; }

 private:
  std::atomic<bool> stop_{false};
  int samples_ = 0;
  int64_t most_resident_ = 0;
  int most_loaded_ = 0;
  std::thread thread_;  // last: it starts once the fields above exist
};

// Unloads every model and waits until nothing of the repository is resident.
void UnloadAll(RepositoryServer* server, const std::vector<std::string>& models) {
  for (const auto& m : models) {
    v1::ModelStatus status;
    ASSERT_TRUE(server->Unload(m, &status).ok());
  }
  ASSERT_TRUE(WaitFor(std::chrono::seconds(30), [&] {
    v1::AdminListModelsResponse list;
    return server->List(&list).ok() && list.resident_bytes() == 0;
  }));
}

// Bursts of first requests to models not loaded, three models a burst, with room for two: two
// loads run side by side (the log's spans overlap), every answer is its model's, and neither
// the sampled resident bytes nor the versions held (loading, loaded or not freed yet) ever pass
// the budget.
// `rounds` bursts of first requests: each to `per_burst` of `models` drawn at random,
// `callers` calls per model (random texts of the pool, greedy or beam 4) sent together, then
// every model unloaded, so that the next burst loads them again. Every call, answered.
template <typename Rng>
std::vector<BurstCall> FirstRequestRounds(RepositoryServer* server,
                                          const std::vector<std::string>& models, int rounds,
                                          size_t per_burst, int callers, Rng& rng) {
  std::vector<BurstCall> all;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> picked = models;
    std::shuffle(picked.begin(), picked.end(), rng);
    picked.resize(std::min(per_burst, picked.size()));
    std::vector<BurstCall> burst;
    for (const auto& m : picked) {
      for (int c = 0; c < callers; ++c) {
        burst.emplace_back(m, static_cast<int>(rng() % Pool().size()), rng() % 2 ? 4 : 1);
      }
    }
    std::shuffle(burst.begin(), burst.end(), rng);
    SendTogether(server, &burst);
    all.insert(all.end(), burst.begin(), burst.end());
    UnloadAll(server, models);
  }
  return all;
}

TEST_F(ModelRepositoryTest, ParallelFirstLoadsOverlapWithinTheBudget) {
  std::mt19937 rng(DrawSeed());
  const int64_t model_bytes = ProbeResidentBytes();
  ASSERT_GT(model_bytes, 0);
  const double budget_mb = 2.5 * static_cast<double>(model_bytes) / (1 << 20);
  constexpr int kModels = 5, kRounds = 4, kPerBurst = 3, kCallersPerModel = 3;
  std::vector<std::string> models;
  for (int i = 0; i < kModels; ++i) {
    models.push_back(absl::StrCat("p", i));
    AddVariant(models.back(), rng());
  }
  RepositoryServer server(
      work_, "parallel",
      {RepositoryFlag(), "--model_load_threads=2", absl::StrCat("--model_memory_mb=", budget_mb),
       "--log_level=debug", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  v1::AdminListModelsResponse first;
  ASSERT_TRUE(server.List(&first).ok());
  const int64_t budget_bytes = first.memory_budget_bytes();
  const int fit = static_cast<int>(budget_bytes / model_bytes);
  ASSERT_EQ(fit, 2);

  BudgetSampler sampler(&server);
  const std::vector<BurstCall> all =
      FirstRequestRounds(&server, models, kRounds, kPerBurst, kCallersPerModel, rng);
  sampler.Stop();
  ExpectAnswersAlone(&server, all);
  std::set<std::vector<int32_t>> distinct;
  for (const auto& m : models) {
    Answer a;
    ASSERT_TRUE(TranslateOne(server.translator(), m, Pool()[0], 1, &a).ok());
    distinct.insert(a.ids);
  }
  EXPECT_GT(distinct.size(), 1u) << "the variants translate alike: routing is invisible";

  const LoadHistory history = HistoryOf(LoadEvents(server.Log()));
  EXPECT_EQ(history.same_model_overlaps, std::vector<std::string>());
  EXPECT_GE(history.starts, kRounds * kPerBurst);
  EXPECT_EQ(static_cast<int>(history.spans.size()), history.starts);
  EXPECT_GT(OverlappingPairs(history.spans), 0) << "no two loads ran at once";
  EXPECT_EQ(history.most_busy, 2) << "no load started beside another";
  EXPECT_LE(history.most_held, fit) << "more versions held at once than the budget holds";
  EXPECT_GT(sampler.samples(), 10);
  EXPECT_LE(sampler.most_resident(), budget_bytes);
  EXPECT_LE(sampler.most_loaded(), fit);

  const std::string metrics = server.Metrics();
  EXPECT_EQ(MetricSum(metrics, "transerve_model_repository_loads_in_flight"), 0);
  EXPECT_EQ(MetricSum(metrics, "transerve_model_loads_total", {"result=\"ok\""}), history.starts);
  std::cerr << history.starts << " loads, " << OverlappingPairs(history.spans)
            << " overlapping pairs, at most " << history.most_held << " versions held\n";
  EXPECT_EQ(server.Terminate(), 0);
}

// Two loader threads but room for one model: the second load must wait for the first model's
// memory, so loads never overlap, though first requests to three models arrive together.
TEST_F(ModelRepositoryTest, ABudgetForOneModelKeepsParallelLoadsApart) {
  std::mt19937 rng(DrawSeed());
  const int64_t model_bytes = ProbeResidentBytes();
  ASSERT_GT(model_bytes, 0);
  const double budget_mb = 1.5 * static_cast<double>(model_bytes) / (1 << 20);
  const std::vector<std::string> models = {"q0", "q1", "q2"};
  for (const auto& m : models) AddVariant(m, rng());
  RepositoryServer server(
      work_, "one_room",
      {RepositoryFlag(), "--model_load_threads=2", absl::StrCat("--model_memory_mb=", budget_mb),
       "--log_level=debug", std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();
  BudgetSampler sampler(&server);
  const std::vector<BurstCall> all = FirstRequestRounds(&server, models, 3, models.size(), 2, rng);
  sampler.Stop();
  ExpectAnswersAlone(&server, all);
  const LoadHistory history = HistoryOf(LoadEvents(server.Log()));
  EXPECT_GE(history.starts, 3 * static_cast<int>(models.size()));
  EXPECT_EQ(OverlappingPairs(history.spans), 0);
  EXPECT_EQ(history.most_busy, 1);
  EXPECT_EQ(history.most_held, 1);
  EXPECT_LE(sampler.most_resident(), static_cast<int64_t>(budget_mb * (1 << 20)) + 1);
  EXPECT_LE(sampler.most_loaded(), 1);
  EXPECT_EQ(server.Terminate(), 0);
}

// Many callers and Admin LoadModel calls for one model at once, with four loader threads: one
// load. Then reloads, unloads and first requests of that model raced against each other: every
// call answers, and its loads never overlap (a reload and a load of one model take turns).
TEST_F(ModelRepositoryTest, OneModelAskedByManyAtOnceLoadsOnce) {
  std::mt19937 rng(DrawSeed());
  AddVariant("a", rng());
  AddVariant("b", rng());
  RepositoryServer server(work_, "one_load",
                          {RepositoryFlag(), "--model_load_threads=4", "--log_level=debug",
                           std::string("--admin_token=") + kAdminToken});
  ASSERT_TRUE(server.serving()) << server.Log();

  constexpr int kCallersA = 24, kCallersB = 8, kAdminLoads = 4;
  std::vector<BurstCall> calls;
  for (int c = 0; c < kCallersA + kCallersB; ++c) {
    calls.emplace_back(c < kCallersA ? "a" : "b", static_cast<int>(rng() % Pool().size()),
                       rng() % 2 ? 4 : 1);
  }
  std::vector<grpc::Status> admin(kAdminLoads);
  {
    std::latch start(kAdminLoads + 1);
    std::vector<std::thread> loads;
    for (int i = 0; i < kAdminLoads; ++i) {
      loads.emplace_back([&, i] {
        start.arrive_and_wait();
        v1::ModelStatus status;
        admin[i] = server.Load("a", &status);
        if (admin[i].ok() && status.state() != v1::ModelStatus::LOADED) {
          admin[i] = grpc::Status(grpc::StatusCode::INTERNAL, "answered before it loaded");
        }
      });
    }
    start.arrive_and_wait();
    SendTogether(&server, &calls);
    for (auto& t : loads) t.join();
  }
  for (const auto& s : admin) EXPECT_TRUE(s.ok()) << Describe(s);
  ExpectAnswersAlone(&server, calls);
  EXPECT_EQ(server.Status("a").value_or(v1::ModelStatus()).loads(), 1);
  EXPECT_EQ(server.Status("b").value_or(v1::ModelStatus()).loads(), 1);
  {
    std::map<std::string, int> starts;
    for (const LoadEvent& e : LoadEvents(server.Log()))
      starts[e.model] += e.kind == LoadEvent::kStart;
    EXPECT_EQ(starts["a"], 1);
    EXPECT_EQ(starts["b"], 1);
  }

  // The races: an Admin reload of "a", an unload of it a few milliseconds in, and first
  // requests after that, each at a random moment.
  std::vector<BurstCall> raced;
  int reloads_ok = 0;
  for (int round = 0; round < 12; ++round) {
    const int unload_after_ms = static_cast<int>(rng() % 12);
    std::vector<int> call_after_ms(4);
    for (int& ms : call_after_ms) ms = unload_after_ms + static_cast<int>(rng() % 12);
    std::vector<BurstCall> round_calls;
    for (size_t i = 0; i < call_after_ms.size(); ++i) {
      round_calls.emplace_back("a", static_cast<int>(rng() % Pool().size()), 1);
    }
    grpc::Status reload, unload;
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
      v1::ModelStatus status;
      reload = server.Reload("a", &status);
    });
    threads.emplace_back([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(unload_after_ms));
      v1::ModelStatus status;
      unload = server.Unload("a", &status);
    });
    for (size_t i = 0; i < round_calls.size(); ++i) {
      threads.emplace_back([&, i] {
        auto stub = server.NewTranslator();
        std::this_thread::sleep_for(std::chrono::milliseconds(call_after_ms[i]));
        BurstCall& call = round_calls[i];
        call.status = TranslateOne(stub.get(), "a", Pool()[call.text], 1, &call.answer);
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_TRUE(reload.ok()) << Describe(reload);
    EXPECT_TRUE(unload.ok()) << Describe(unload);
    reloads_ok += reload.ok();
    raced.insert(raced.end(), round_calls.begin(), round_calls.end());
  }
  EXPECT_EQ(reloads_ok, 12);
  ExpectAnswersAlone(&server, raced);
  const LoadHistory history = HistoryOf(LoadEvents(server.Log()));
  EXPECT_EQ(history.same_model_overlaps, std::vector<std::string>());
  EXPECT_EQ(static_cast<int>(history.spans.size()), history.starts);
  const auto a = server.Status("a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->failed_loads(), 0);
  EXPECT_FALSE(a->reloading());
  EXPECT_EQ(MetricSum(server.Metrics(), "transerve_model_repository_loads_in_flight"), 0);
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace transerve::repository_test
