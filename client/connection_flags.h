// The flags by which transerve-client and transerve-loadgen reach a server (--target, TLS,
// mutual TLS, bearer token), defined once for both programs.
#pragma once

#include <string>

#include "absl/flags/declare.h"
#include "client/channel.h"

ABSL_DECLARE_FLAG(std::string, target);

namespace transerve {

// The channel the flags describe; `connection_index` as in ChannelOptions.
ChannelOptions ChannelOptionsFromFlags(int connection_index = 0);

// --auth_token, or $TRANSERVE_AUTH_TOKEN when the flag is empty.
std::string AuthTokenFromFlags();

}  // namespace transerve
