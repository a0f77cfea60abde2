// The CUDA emulator's test hooks (emulator/runtime.cc), looked up in the loaded plugin: nullptr
// when the plugin is the real one, whose tests then skip.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

namespace transerve::testing {

template <typename Fn>
Fn EmulatorHook(const char* name) {
  const char* path = std::getenv("TRANSERVE_CUDA_PLUGIN");
  void* plugin = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return plugin != nullptr ? reinterpret_cast<Fn>(dlsym(plugin, name)) : nullptr;
}

// What the emulated device has been asked to do since the plugin was loaded.
class DeviceCounters {
 public:
  DeviceCounters()
      : host_waits_(EmulatorHook<Counter>("transerve_emulator_host_waits")),
        allocations_(EmulatorHook<Counter>("transerve_emulator_device_allocations")),
        stream_work_(EmulatorHook<StreamWork>("transerve_emulator_stream_work")) {}

  // False on a real GPU: the counts below are then all empty or zero.
  bool available() const {
    return host_waits_ != nullptr && allocations_ != nullptr && stream_work_ != nullptr;
  }
  // Calls that made the host wait for the device (synchronisations, synchronous copies, frees).
  uint64_t host_waits() const { return host_waits_ != nullptr ? host_waits_() : 0; }
  uint64_t allocations() const { return allocations_ != nullptr ? allocations_() : 0; }
  // Operations (kernels, copies, memsets, GEMMs) queued on each stream, in creation order
  // (index 0: the legacy default stream), destroyed streams included.
  std::vector<uint64_t> stream_work() const {
    if (stream_work_ == nullptr) return {};
    std::vector<uint64_t> counts(static_cast<size_t>(stream_work_(nullptr, 0)));
    stream_work_(counts.data(), static_cast<int>(counts.size()));
    return counts;
  }
  uint64_t operations() const {
    const std::vector<uint64_t> counts = stream_work();
    return std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  }

 private:
  using Counter = uint64_t (*)();
  using StreamWork = int (*)(uint64_t*, int);
  Counter host_waits_;
  Counter allocations_;
  StreamWork stream_work_;
};

}  // namespace transerve::testing
