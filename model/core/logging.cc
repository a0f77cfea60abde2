#include "model/core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace transerve {

spdlog::logger& Log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("transerve");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    return l;
  }();
  return *logger;
}

void SetLogLevel(std::string_view level) {
  Log().set_level(spdlog::level::from_str(std::string(level)));
}

}  // namespace transerve
