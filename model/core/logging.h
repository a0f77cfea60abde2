// The engine's one logging entry point (spdlog underneath), so every binary logs the same way.
#pragma once

#include <spdlog/spdlog.h>

namespace transerve {

// Returns the process-wide logger ("transerve", to stderr). Safe to call from any thread.
spdlog::logger& Log();

// Sets the level from a name: trace, debug, info, warn, error, off.
void SetLogLevel(std::string_view level);

}  // namespace transerve
