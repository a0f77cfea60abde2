// transerve-server as a child process, for the tests that drive the real binary as a user does.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/paths.h"

extern char** environ;

namespace transerve::testing {

// transerve-server as a child process with its log in a file; killed if still running at the
// end.
class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    std::vector<std::string> argv_strings = {BinaryDir() + "/bin/transerve-server"};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }

  // The gRPC port from the "serving:" line, or 0 if the server exits or takes over `limit`.
  int WaitServing(std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      const std::string text = Log();
      const size_t at = text.find("serving:");
      if (at != std::string::npos) {
        const size_t port = text.find(" port=", at);
        if (port != std::string::npos) return std::stoi(text.substr(port + 6));
      }
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return 0;
  }
  // A port the "serving:" line names ("http_port", "metrics_port"), after WaitServing; -1 if
  // the line does not name it.
  int ServingPort(const std::string& name) const {
    const std::string text = Log();
    const size_t at = text.find("serving:");
    if (at == std::string::npos) return -1;
    const size_t port = text.find(" " + name + "=", at);
    if (port == std::string::npos) return -1;
    return std::stoi(text.substr(port + name.size() + 2));
  }
  // SIGTERM, then the exit status (-1 if it did not exit within `limit`).
  int Terminate(std::chrono::seconds limit) {
    kill(pid_, SIGTERM);
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace transerve::testing
