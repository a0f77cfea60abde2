// transerve-client's --admin commands: the model repository's transerve.v1.Admin service
// (docs/model-repository.md) — list, load, unload, reload — with an admin token, never the
// Translator token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "transerve/v1/admin.pb.h"

namespace transerve {

// Whether --admin names a command (then RunAdminCommand does the whole run).
bool AdminCommandRequested();

// Runs --admin=list|load|unload|reload and prints its answer; 0 on success, 1 with the gRPC
// status on stderr on an RPC error, 2 for a bad command line. `timeout_seconds` <= 0: none.
int RunAdminCommand(const std::shared_ptr<grpc::Channel>& channel, double timeout_seconds);

// --admin_token, else the first line of --admin_token_file, else $TRANSERVE_ADMIN_TOKEN.
absl::StatusOr<std::string> AdminTokenFromFlags();

// One model's state on one line ("NAME LOADED version=2 ..."), as load/unload/reload print it.
std::string FormatModelStatusLine(const v1::ModelStatus& status);

// ListModels' answer as a table (a header, one row per model) and the budget line.
std::string FormatModelTable(const v1::AdminListModelsResponse& response);

}  // namespace transerve
