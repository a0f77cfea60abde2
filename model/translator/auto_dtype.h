// What dtype=auto loads on the CPU at each kernel level (ops::CpuIsa), as CTranslate2's "auto"
// does: the fastest format the level runs well, with the formats to fall back to when a model
// fails the load-time quality check (quality_check.h). A pure rule: no model, no CPU probing
// (docs/engine.md, "dtype=auto" has the measurements it rests on).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/ops/ops.h"

namespace transerve {

struct AutoCpuDtypes {
  // Tried in order, best first; each one but float32 (the check's reference, always last) is
  // kept only if it passes the quality check.
  std::vector<ops::WeightFormat> formats;
  // Why the first one, for the choice line, e.g. "avx512_vnni: int8 on vpdpbusd".
  std::string reason;
};

// The formats for the kernel level `isa` (a name of ops::SupportedCpuIsas(); any other name
// gets float32 alone).
AutoCpuDtypes AutoCpuDtypesFor(std::string_view isa);

}  // namespace transerve
