// transerve-echo-server: a Translator that echoes after a fixed delay and computes nothing, to
// show how many calls per second transerve-loadgen can drive (BENCHMARKS.md).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/echo_service.h"

ABSL_FLAG(int, port, 50052, "Port to listen on (0: a free one, printed)");
ABSL_FLAG(int, delay_us, 0, "Delay before each answer, in microseconds");
ABSL_FLAG(bool, serial, false, "Answer one request at a time");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  transerve::EchoTranslator service(
      {.default_delay = std::chrono::microseconds(absl::GetFlag(FLAGS_delay_us)),
       .serial = absl::GetFlag(FLAGS_serial)});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(absl::GetFlag(FLAGS_port)),
                           grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "transerve-echo-server: cannot listen\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << port << std::endl;
  server->Wait();
  return 0;
}
