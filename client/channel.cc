#include "client/channel.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace transerve {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      std::ifstream in(options.tls_ca_file, std::ios::binary);
      if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", options.tls_ca_file));
      std::ostringstream pem;
      pem << in.rdbuf();
      ssl.pem_root_certs = pem.str();
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
