// How the command-line clients (transerve-client, transerve-loadgen) reach a server: plain or
// TLS channels, and the bearer token of servers started with --auth_token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace transerve {

struct ChannelOptions {
  std::string target;  // HOST:PORT
  bool tls = false;
  std::string tls_ca_file;  // PEM roots for TLS; empty: the system's
  // PEM client certificate chain and key, for servers that require mutual TLS.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Channels made with different values get their own TCP connection (a load generator
  // spreads calls over several; gRPC would otherwise share one connection).
  int connection_index = 0;
};

// NOT_FOUND when a PEM file cannot be read; INVALID_ARGUMENT for a certificate without its key
// (or the reverse), or TLS files without TLS.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options);

// The flag's token, or $TRANSERVE_AUTH_TOKEN when the flag is empty.
std::string AuthTokenFromFlagOrEnv(const std::string& flag_value);

}  // namespace transerve
