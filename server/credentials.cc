#include "server/credentials.h"

#include <grpcpp/security/server_credentials.h>

#include "model/core/read_file.h"

namespace transerve {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerConfig& c) {
  if (c.tls_cert_file.empty() && c.tls_key_file.empty()) {
    if (!c.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (c.tls_cert_file.empty() || c.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls_cert and --tls_key");
  }
  auto cert = ReadWholeFile(c.tls_cert_file, "the certificate (--tls_cert)");
  if (!cert.ok()) return cert.status();
  auto key = ReadWholeFile(c.tls_key_file, "the private key (--tls_key)");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!c.tls_client_ca_file.empty()) {
    auto ca = ReadWholeFile(c.tls_client_ca_file, "the client CA roots (--tls_client_ca)");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace transerve
