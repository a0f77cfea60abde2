// A loopback TCP relay for tests that need a client to vanish the way a crashed process or a
// dropped network does: Disconnect() closes every relayed connection at once, without the
// HTTP/2 goodbye (RST_STREAM, GOAWAY) a cancelled gRPC call would send.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace transerve::testing {

class TcpProxy {
 public:
  // Listens on a free loopback port and relays each accepted connection to 127.0.0.1:target.
  explicit TcpProxy(int target_port) : target_port_(target_port) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listener_, 16);
    socklen_t len = sizeof(addr);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~TcpProxy() {
    stop_.store(true);
    thread_.join();
    for (auto& [a, b] : pairs_) {
      close(a);
      close(b);
    }
    close(listener_);
  }
  int port() const { return port_; }

  // Closes both ends of every connection relayed so far.
  void Disconnect() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [a, b] : pairs_) {
      shutdown(a, SHUT_RDWR);
      shutdown(b, SHUT_RDWR);
    }
  }

 private:
  void Run() {
    std::vector<char> buffer(1 << 16);
    while (!stop_.load()) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      std::vector<std::pair<int, int>> pairs;
      {
        std::lock_guard<std::mutex> lock(mu_);
        pairs = pairs_;
      }
      for (auto& [a, b] : pairs) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) Accept();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const auto& [a, b] = pairs[(i - 1) / 2];
        const int from = fds[i].fd;
        const int to = from == a ? b : a;
        const ssize_t n = read(from, buffer.data(), buffer.size());
        // MSG_NOSIGNAL: a peer already gone must not raise SIGPIPE in the test process.
        if (n <= 0 || send(to, buffer.data(), static_cast<size_t>(n), MSG_NOSIGNAL) != n) {
          Close(a, b);
        }
      }
    }
  }
  // One side went away: the other goes too, and the pair is forgotten.
  void Close(int a, int b) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < pairs_.size(); ++i) {
      if (pairs_[i].first != a) continue;
      close(a);
      close(b);
      pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
  void Accept() {
    const int client = accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    const int upstream = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      close(upstream);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    pairs_.emplace_back(client, upstream);
  }

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::pair<int, int>> pairs_;  // live connections: (client, upstream)
  std::thread thread_;
};

}  // namespace transerve::testing
