#include "client/admin_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "transerve/v1/admin.grpc.pb.h"

ABSL_FLAG(std::string, admin, "",
          "Model repository administration: list, load, unload or reload (with --admin_model), "
          "then exit");
ABSL_FLAG(std::string, admin_model, "", "The model --admin=load|unload|reload acts on");
ABSL_FLAG(std::string, admin_token, "",
          "Admin token of the server's --admin_token / --admin_tokens_file (default: "
          "--admin_token_file, else $TRANSERVE_ADMIN_TOKEN)");
ABSL_FLAG(std::string, admin_token_file, "",
          "File whose first line is the admin token (keeps it off the command line)");

namespace transerve {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;

std::string Megabytes(int64_t bytes) { return absl::StrFormat("%.1f", bytes / kBytesPerMb); }

std::string StateName(v1::ModelStatus::State state) { return v1::ModelStatus::State_Name(state); }

std::string LastUsed(int64_t unix_ms) {
  if (unix_ms <= 0) return "never";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

// Tabs and newlines of an error message would break the table's rows.
std::string OneLine(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\t'; }, ' ');
  return text;
}

int ReportAdminError(const grpc::Status& s) {
  std::cerr << "transerve-client: RPC failed: "
            << absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())) << ": "
            << s.error_message() << "\n";
  return 1;
}

}  // namespace

bool AdminCommandRequested() { return !absl::GetFlag(FLAGS_admin).empty(); }

absl::StatusOr<std::string> AdminTokenFromFlags() {
  if (const std::string token = absl::GetFlag(FLAGS_admin_token); !token.empty()) return token;
  if (const std::string path = absl::GetFlag(FLAGS_admin_token_file); !path.empty()) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError("cannot read --admin_token_file " + path);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) return absl::InvalidArgumentError("--admin_token_file " + path + " is empty");
    return line;
  }
  const char* env = std::getenv("TRANSERVE_ADMIN_TOKEN");
  return std::string(env == nullptr ? "" : env);
}

std::string FormatModelStatusLine(const v1::ModelStatus& m) {
  std::string line = absl::StrFormat(
      "%s %s%s%s version=%d resident_mb=%s in_flight=%d loads=%d failed_loads=%d unloads=%d "
      "load_seconds=%.3f last_used=%s",
      m.name(), StateName(m.state()), m.pinned() ? " pinned" : "",
      m.reloading() ? " reloading" : "", m.version(), Megabytes(m.resident_bytes()), m.in_flight(),
      m.loads(), m.failed_loads(), m.unloads(), m.load_seconds(), LastUsed(m.last_used_unix_ms()));
  if (!m.last_error().empty()) line += " last_error=\"" + OneLine(m.last_error()) + "\"";
  return line;
}

std::string FormatModelTable(const v1::AdminListModelsResponse& response) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "STATE", "PINNED", "VERSION",
                                                 "RESIDENT_MB", "IN_FLIGHT", "LOADS/FAILED/UNLOADS",
                                                 "LAST_USED", "LAST_ERROR"}};
  for (const auto& m : response.models()) {
    std::string state = StateName(m.state());
    if (m.reloading()) state += "+reloading";
    rows.push_back({m.name(), state, m.pinned() ? "yes" : "no", absl::StrCat(m.version()),
                    Megabytes(m.resident_bytes()), absl::StrCat(m.in_flight()),
                    absl::StrCat(m.loads(), "/", m.failed_loads(), "/", m.unloads()),
                    LastUsed(m.last_used_unix_ms()),
                    m.last_error().empty() ? "-" : OneLine(m.last_error())});
  }
  // Every column but the last padded to its widest cell.
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      out += row[c];
      if (c + 1 < row.size()) out += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += "\n";
  }
  const std::string budget = response.memory_budget_bytes() > 0
                                 ? Megabytes(response.memory_budget_bytes()) + " MB"
                                 : std::string("unbounded");
  const std::string most = response.max_loaded_models() > 0
                               ? absl::StrCat(response.max_loaded_models())
                               : std::string("unbounded");
  absl::StrAppendFormat(&out, "budget: %s MB resident of %s; %d models loaded of %s\n",
                        Megabytes(response.resident_bytes()), budget, response.loaded_models(),
                        most);
  return out;
}

int RunAdminCommand(const std::shared_ptr<grpc::Channel>& channel, double timeout_seconds) {
  const std::string command = absl::GetFlag(FLAGS_admin);
  const std::string model = absl::GetFlag(FLAGS_admin_model);
  const bool needs_model = command == "load" || command == "unload" || command == "reload";
  if (command != "list" && !needs_model) {
    std::cerr << "transerve-client: --admin must be list, load, unload or reload, not '" << command
              << "'\n";
    return 2;
  }
  if (needs_model && model.empty()) {
    std::cerr << "transerve-client: --admin=" << command << " needs --admin_model=NAME\n";
    return 2;
  }
  absl::StatusOr<std::string> token = AdminTokenFromFlags();
  if (!token.ok()) {
    std::cerr << "transerve-client: " << token.status().message() << "\n";
    return 2;
  }
  grpc::ClientContext ctx;
  if (!token->empty()) ctx.AddMetadata("authorization", "Bearer " + *token);
  if (timeout_seconds > 0) {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::microseconds(static_cast<int64_t>(timeout_seconds * 1e6)));
  }
  auto stub = v1::Admin::NewStub(channel);
  if (command == "list") {
    v1::AdminListModelsResponse response;
    grpc::Status s = stub->ListModels(&ctx, v1::AdminListModelsRequest(), &response);
    if (!s.ok()) return ReportAdminError(s);
    std::cout << FormatModelTable(response);
    return 0;
  }
  v1::ModelRequest request;
  request.set_name(model);
  v1::ModelStatus status;
  grpc::Status s = command == "load"     ? stub->LoadModel(&ctx, request, &status)
                   : command == "unload" ? stub->UnloadModel(&ctx, request, &status)
                                         : stub->ReloadModel(&ctx, request, &status);
  if (!s.ok()) return ReportAdminError(s);
  std::cout << FormatModelStatusLine(status) << "\n";
  return 0;
}

}  // namespace transerve
