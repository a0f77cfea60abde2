// The CUDA emulator's test hooks (emulator/runtime.cc), looked up in the loaded plugin: nullptr
// when the plugin is the real one, whose tests then skip.
#pragma once

#include <dlfcn.h>

#include <cstdlib>

namespace transerve::testing {

template <typename Fn>
Fn EmulatorHook(const char* name) {
  const char* path = std::getenv("TRANSERVE_CUDA_PLUGIN");
  void* plugin = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return plugin != nullptr ? reinterpret_cast<Fn>(dlsym(plugin, name)) : nullptr;
}

}  // namespace transerve::testing
