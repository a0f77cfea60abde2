// Activation functions a Transformer feed-forward block may use (config.json activation_function).
#pragma once

#include <string_view>

namespace transerve {

enum class Activation {
  kIdentity,  // no activation (plain linear layer)
  kSwish,     // x * sigmoid(x); "swish" and "silu"
  kRelu,
  kGelu,      // exact erf form
  kGeluTanh,  // tanh approximation ("gelu_new")
};

inline std::string_view ActivationName(Activation a) {
  switch (a) {
    case Activation::kIdentity:
      return "identity";
    case Activation::kSwish:
      return "swish";
    case Activation::kRelu:
      return "relu";
    case Activation::kGelu:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_new";
  }
  return "unknown";
}

}  // namespace transerve
