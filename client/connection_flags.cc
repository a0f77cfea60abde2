#include "client/connection_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, target, "localhost:50051", "Server address HOST:PORT");
ABSL_FLAG(bool, tls, false, "Connect with TLS");
ABSL_FLAG(std::string, tls_ca, "", "PEM root certificates for --tls (default: the system's)");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate chain, for mutual TLS (with --tls)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, auth_token, "",
          "Bearer token for servers started with --auth_token (default: $TRANSERVE_AUTH_TOKEN)");

namespace transerve {

ChannelOptions ChannelOptionsFromFlags(int connection_index) {
  return {.target = absl::GetFlag(FLAGS_target),
          .tls = absl::GetFlag(FLAGS_tls),
          .tls_ca_file = absl::GetFlag(FLAGS_tls_ca),
          .tls_cert_file = absl::GetFlag(FLAGS_tls_cert),
          .tls_key_file = absl::GetFlag(FLAGS_tls_key),
          .connection_index = connection_index};
}

std::string AuthTokenFromFlags() { return AuthTokenFromFlagOrEnv(absl::GetFlag(FLAGS_auth_token)); }

}  // namespace transerve
