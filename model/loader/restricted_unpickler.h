// A pickle reader for torch.save checkpoints that runs no code: it knows the opcodes protocols
// 2-4 use for plain data, and of all Python callables only the few a state dict needs
// (collections.OrderedDict, torch._utils._rebuild_tensor[_v2], torch._utils._rebuild_parameter,
// and torch.{Float,Half,BFloat16}Storage as storage types). Anything else is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace transerve {

enum class PickleKind {
  kNone,
  kBool,
  kInt,     // fits int64
  kBigInt,  // LONG1 wider than 64 bits: `text` holds its little-endian bytes
  kFloat,
  kString,
  kTuple,
  kList,
  kDict,     // `items` holds key, value, key, value...
  kGlobal,   // an allowed callable or storage type: `text` is "module.name"
  kStorage,  // a persistent id ('storage', type, key, location, numel[, None])
  kTensor,   // the result of _rebuild_tensor[_v2]
};

struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  int64_t number = 0;                  // kBool, kInt; kStorage: numel; kTensor: storage offset
  double real = 0;                     // kFloat
  std::string text;                    // kString, kBigInt, kGlobal; kStorage: key
  std::string dtype;                   // kStorage: "F32", "F16" or "BF16"
  std::vector<uint32_t> items;         // kTuple, kList, kDict; kTensor: {the storage value}
  std::vector<int64_t> shape, stride;  // kTensor
};

// The values of one pickle, referred to by index (values share, so a tied weight is one storage
// value reached from several tensors). Containers never own each other, so a pickle that puts a
// list inside itself cannot make a cycle of owners.
struct Unpickled {
  std::vector<PickleValue> values;
  uint32_t root = 0;
  std::size_t end = 0;  // Offset just past the STOP opcode in the input.
};

// Reads one pickle from the start of `data`. Errors are INVALID_ARGUMENT naming `where` and the
// offset and opcode (or global) that was refused; the input may be truncated or hostile.
absl::StatusOr<Unpickled> RestrictedUnpickle(std::span<const uint8_t> data,
                                             const std::string& where);

}  // namespace transerve
