// The server's transport security from its configuration: plaintext, TLS, or mutual TLS.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "server/server.h"

namespace grpc {
class ServerCredentials;
}  // namespace grpc

namespace transerve {

// Plaintext without PEM files; TLS with --tls_cert and --tls_key; mutual TLS with
// --tls_client_ca as well. INVALID_ARGUMENT for an incomplete combination, the reader's error
// for a file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerConfig& config);

}  // namespace transerve
