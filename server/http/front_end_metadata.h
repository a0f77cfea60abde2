// How a Translator call says which front end it came through: the HTTP front end calls the
// service in-process and marks its calls with this metadata, so that metrics and logs count
// them as HTTP. (A gRPC client could send it too; it changes nothing but the label.)
#pragma once

#include <grpcpp/server_context.h>

#include <string_view>

namespace transerve {

inline constexpr char kFrontEndMetadataKey[] = "x-transerve-front-end";

// "http" for the HTTP front end's calls, "grpc" for every other.
inline const char* FrontEndOf(const grpc::CallbackServerContext& ctx) {
  const auto& md = ctx.client_metadata();
  const auto it = md.find(kFrontEndMetadataKey);
  if (it != md.end() && std::string_view(it->second.data(), it->second.size()) == "http") {
    return "http";
  }
  return "grpc";
}

}  // namespace transerve
