#include "model/ops/cuda_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/core/tensor.h"
#include "model/ops/cuda/plugin_abi.h"

namespace transerve {
namespace {

constexpr const char* kPluginName = "libtranserve_cuda.so";

struct Plugin {
  void* handle = nullptr;
  TranserveCudaProbeFn probe = nullptr;
  TranserveCudaSelfTestFn self_test = nullptr;
  const TranserveCudaApi* api = nullptr;
  std::string error;  // why it is not loaded
};

std::vector<std::string> Candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("TRANSERVE_CUDA_PLUGIN"); env != nullptr && *env != '\0') {
    paths.emplace_back(env);
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path().parent_path() / "lib" / kPluginName).string());
  }
  paths.emplace_back(kPluginName);  // the loader's search path
  return paths;
}

Plugin Load() {
  Plugin p;
  std::string errors;
  for (const std::string& path : Candidates()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", e != nullptr ? e : path);
      continue;
    }
    auto abi = reinterpret_cast<TranserveCudaAbiFn>(dlsym(handle, "transerve_cuda_abi"));
    auto probe = reinterpret_cast<TranserveCudaProbeFn>(dlsym(handle, "transerve_cuda_probe"));
    auto self_test =
        reinterpret_cast<TranserveCudaSelfTestFn>(dlsym(handle, "transerve_cuda_self_test"));
    auto api = reinterpret_cast<TranserveCudaApiFn>(dlsym(handle, "transerve_cuda_api"));
    if (abi == nullptr || probe == nullptr || self_test == nullptr || api == nullptr ||
        abi() != TRANSERVE_CUDA_PLUGIN_ABI || api()->abi != TRANSERVE_CUDA_PLUGIN_ABI) {
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", path,
                      ": not a transerve CUDA plugin of ABI ", TRANSERVE_CUDA_PLUGIN_ABI);
      dlclose(handle);
      continue;
    }
    p.handle = handle;
    p.probe = probe;
    p.self_test = self_test;
    p.api = api();
    return p;
  }
  p.error = absl::StrCat("CUDA backend plugin not found (", errors, ")");
  return p;
}

const Plugin& LoadedPlugin() {
  static const Plugin* plugin = new Plugin(Load());
  return *plugin;
}

thread_local TranserveCudaStream* current_stream = nullptr;

// Null (Buffer then throws OutOfMemoryError) unless the device is lost, which no smaller
// allocation would mend.
void* AllocateOnCurrentStream(size_t bytes) {
  const TranserveCudaApi& api = *LoadedPlugin().api;
  void* data = api.allocate(current_stream, bytes);
  if (data == nullptr && api.last_error_kind() == TRANSERVE_CUDA_ERROR_DEVICE_LOST) {
    throw DeviceLostError(absl::StrCat("allocating ", bytes, " bytes: ", api.last_error()));
  }
  return data;
}

}  // namespace

TranserveCudaStream* CurrentCudaStream() { return current_stream; }
void SetCurrentCudaStream(TranserveCudaStream* stream) { current_stream = stream; }

const CudaProbe& ProbeCuda() {
  static const CudaProbe* probe = [] {
    auto* result = new CudaProbe();
    const Plugin& plugin = LoadedPlugin();
    if (plugin.handle == nullptr) {
      result->detail = plugin.error;
      return result;
    }
    result->plugin_loaded = true;
    std::array<char, 512> message{};
    result->devices = plugin.probe(message.data(), message.size());
    result->detail = message.data();
    return result;
  }();
  return *probe;
}

const TranserveCudaApi* CudaApi() {
  static const TranserveCudaApi* api = []() -> const TranserveCudaApi* {
    if (ProbeCuda().devices == 0) return nullptr;
    const TranserveCudaApi* table = LoadedPlugin().api;
    RegisterAllocator(Device::kCuda, {AllocateOnCurrentStream, table->free});
    return table;
  }();
  return api;
}

bool CudaSelfTest(std::string* message) {
  struct Outcome {
    bool ok = false;
    std::string message;
  };
  // Once per process: the answer cannot change, and every translator created asks.
  static const Outcome* outcome = [] {
    auto* result = new Outcome();
    const Plugin& plugin = LoadedPlugin();
    if (plugin.handle == nullptr) {
      result->message = plugin.error;
      return result;
    }
    std::array<char, 512> text{};
    result->ok = plugin.self_test(text.data(), text.size()) == 1;
    result->message = text.data();
    return result;
  }();
  *message = outcome->message;
  return outcome->ok;
}

}  // namespace transerve
