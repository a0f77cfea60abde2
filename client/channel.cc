#include "client/channel.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace transerve {

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!options.tls && (!options.tls_ca_file.empty() || !options.tls_cert_file.empty())) {
    return absl::InvalidArgumentError("--tls_ca, --tls_cert and --tls_key need --tls");
  }
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      auto roots = ReadFile(options.tls_ca_file);
      if (!roots.ok()) return roots.status();
      ssl.pem_root_certs = *roots;
    }
    if (!options.tls_cert_file.empty()) {
      auto cert = ReadFile(options.tls_cert_file);
      if (!cert.ok()) return cert.status();
      auto key = ReadFile(options.tls_key_file);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // A channel-private subchannel pool plus a distinguishing argument: a connection of its own.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("transerve.connection_index", options.connection_index);
  return grpc::CreateCustomChannel(options.target, credentials, args);
}

std::string AuthTokenFromFlagOrEnv(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  const char* env = std::getenv("TRANSERVE_AUTH_TOKEN");
  return env != nullptr ? env : "";
}

}  // namespace transerve
