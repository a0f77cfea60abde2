// transerve-client's --admin commands and --list_models' loaded column, the real binary
// against stand-in Admin and Translator services that record what they were sent: the table
// and status lines, the token (flag, file, environment), exit statuses.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/paths.h"
#include "transerve/v1/admin.grpc.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

v1::ModelStatus Model(const std::string& name, v1::ModelStatus::State state, int64_t mb) {
  v1::ModelStatus m;
  m.set_name(name);
  m.set_state(state);
  m.set_resident_bytes(mb << 20);
  m.set_version(state == v1::ModelStatus::LOADED ? 3 : 0);
  m.set_loads(3);
  m.set_failed_loads(1);
  m.set_unloads(2);
  m.set_in_flight(5);
  m.set_last_used_unix_ms(state == v1::ModelStatus::LOADED ? 1764655273000 : 0);
  return m;
}

// Answers from fixed data; remembers each call's method, model and authorization header.
class StandInAdmin final : public v1::Admin::Service {
 public:
  grpc::Status ListModels(grpc::ServerContext* ctx, const v1::AdminListModelsRequest*,
                          v1::AdminListModelsResponse* out) override {
    Record(ctx, "list", "");
    *out->add_models() = Model("en-de", v1::ModelStatus::LOADED, 61);
    v1::ModelStatus failed = Model("en-fr", v1::ModelStatus::UNLOADED, 0);
    failed.set_last_error("model.safetensors:\ttruncated\n(DATA_LOSS)");
    *out->add_models() = failed;
    out->set_memory_budget_bytes(512ll << 20);
    out->set_resident_bytes(61ll << 20);
    out->set_max_loaded_models(4);
    out->set_loaded_models(1);
    return grpc::Status::OK;
  }
  grpc::Status LoadModel(grpc::ServerContext* ctx, const v1::ModelRequest* req,
                         v1::ModelStatus* out) override {
    Record(ctx, "load", req->name());
    *out = Model(req->name(), v1::ModelStatus::LOADED, 61);
    return grpc::Status::OK;
  }
  grpc::Status UnloadModel(grpc::ServerContext* ctx, const v1::ModelRequest* req,
                           v1::ModelStatus*) override {
    Record(ctx, "unload", req->name());
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "a --model_dir model is pinned");
  }
  grpc::Status ReloadModel(grpc::ServerContext* ctx, const v1::ModelRequest* req,
                           v1::ModelStatus* out) override {
    Record(ctx, "reload", req->name());
    *out = Model(req->name(), v1::ModelStatus::LOADED, 61);
    out->set_version(4);
    return grpc::Status::OK;
  }

  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  void Record(grpc::ServerContext* ctx, const std::string& method, const std::string& model) {
    std::string auth = "-";
    auto it = ctx->client_metadata().find("authorization");
    if (it != ctx->client_metadata().end())
      auth = std::string(it->second.data(), it->second.size());
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(absl::StrCat(method, " ", model, " ", auth));
  }
  std::mutex mu_;
  std::vector<std::string> calls_;
};

class StandInTranslator final : public v1::Translator::Service {
 public:
  grpc::Status ListModels(grpc::ServerContext*, const v1::ListModelsRequest*,
                          v1::ListModelsResponse* out) override {
    auto* a = out->add_models();
    a->set_name("en-de");
    a->set_loaded(true);
    a->set_is_default(true);
    a->set_source_language("en");
    a->set_target_language("de");
    auto* b = out->add_models();
    b->set_name("en-fr");
    b->set_loaded(false);
    auto* c = out->add_models();
    c->set_name("nllb");
    c->set_loaded(false);
    c->set_source_language("mul");
    c->set_target_language("mul");
    for (const char* l : {"de", "en", "fr"}) {
      c->add_source_languages(l);
      c->add_target_languages(l);
    }
    return grpc::Status::OK;
  }
};

struct ClientRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class AdminClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&admin_);
    builder.RegisterService(&translator_);
    server_ = builder.BuildAndStart();
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  ClientRun Client(const std::string& args, const std::string& env = "") {
    const std::string cmd = absl::StrCat(env, " ", testing::BinaryDir(),
                                         "/bin/transerve-client --target=127.0.0.1:", port_,
                                         " --timeout=20 ", args, " 2>&1");
    ClientRun run;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) return run;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.output.append(buffer, n);
    const int status = pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
  }

  StandInAdmin admin_;
  StandInTranslator translator_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(AdminClientTest, ListPrintsATableAndTheBudget) {
  const ClientRun run = Client("--admin=list --admin_token=tok-1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<std::string> want = {
      "NAME", "STATE", "PINNED", "RESIDENT_MB", "IN_FLIGHT", "LOADS/FAILED/UNLOADS", "LAST_USED",
      "LAST_ERROR",
      // en-de's row
      "en-de", "LOADED", "61.0", "3/1/2", "2025-12-02T06:01:13Z",
      // en-fr's row: its error on the row's one line
      "en-fr", "UNLOADED", "never", "model.safetensors: truncated (DATA_LOSS)",
      "budget: 61.0 MB resident of 512.0 MB; 1 models loaded of 4"};
  for (const auto& w : want)
    EXPECT_TRUE(absl::StrContains(run.output, w)) << w << "\n" << run.output;
  // Header, two rows, the budget.
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 4) << run.output;
  EXPECT_EQ(admin_.calls(), std::vector<std::string>{"list  Bearer tok-1"});
}

TEST_F(AdminClientTest, LoadAndReloadPrintTheResultingStatus) {
  ClientRun run = Client("--admin=load --admin_model=en-de --admin_token=tok-1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(absl::StartsWith(run.output, "en-de LOADED version=3 resident_mb=61.0 in_flight=5"))
      << run.output;
  run = Client("--admin=reload --admin_model=en-de --admin_token=tok-1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "version=4")) << run.output;
  EXPECT_EQ(admin_.calls(),
            (std::vector<std::string>{"load en-de Bearer tok-1", "reload en-de Bearer tok-1"}));
}

TEST_F(AdminClientTest, AnErrorExitsNonZeroWithTheStatus) {
  const ClientRun run = Client("--admin=unload --admin_model=en-de --admin_token=tok-1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(run.output, "FAILED_PRECONDITION: a --model_dir model is pinned"))
      << run.output;
}

TEST_F(AdminClientTest, TheTokenComesFromTheFlagTheFileOrTheEnvironment) {
  const std::string file =
      (std::filesystem::temp_directory_path() / absl::StrCat("admin_token_", getpid())).string();
  {
    std::ofstream out(file);
    out << "from-file\nsecond line ignored\n";
  }
  EXPECT_EQ(Client("--admin=list --admin_token_file=" + file).exit_code, 0);
  EXPECT_EQ(Client("--admin=list", "TRANSERVE_ADMIN_TOKEN=from-env").exit_code, 0);
  EXPECT_EQ(Client("--admin=list").exit_code, 0);
  // The Translator's token is not sent to Admin.
  EXPECT_EQ(Client("--admin=list --auth_token=user-token").exit_code, 0);
  EXPECT_EQ(admin_.calls(),
            (std::vector<std::string>{"list  Bearer from-file", "list  Bearer from-env", "list  -",
                                      "list  -"}));
  // A missing file is a command-line error, and nothing is called.
  EXPECT_EQ(Client("--admin=list --admin_token_file=" + file + ".missing").exit_code, 2);
  std::filesystem::remove(file);
  EXPECT_EQ(admin_.calls().size(), 4u);
}

TEST_F(AdminClientTest, BadCommandLinesExitTwoWithoutACall) {
  ClientRun run = Client("--admin=restart");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(run.output, "list, load, unload or reload")) << run.output;
  run = Client("--admin=load");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(run.output, "--admin_model")) << run.output;
  EXPECT_TRUE(admin_.calls().empty());
}

TEST_F(AdminClientTest, ListModelsSaysWhichAreLoadedAndTheirLanguages) {
  const ClientRun run = Client("--list_models");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "en-de (default)")) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "\tloaded\ten->de\n")) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "en-fr\t")) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "\tnot loaded\t?->?\n")) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "\tnot loaded\tde,en,fr->de,en,fr\n")) << run.output;
}

}  // namespace
}  // namespace transerve
