#include "model/translator/auto_dtype.h"

namespace transerve {

AutoCpuDtypes AutoCpuDtypesFor(std::string_view isa) {
  using ops::WeightFormat;
  // int8 first at every level: on the opus-mt-en-de shape it is the fastest format at each one,
  // VNNI or not (docs/engine.md), and its results are the same bits at every level. bfloat16 is
  // the fallback only where vdpbf16ps runs it; elsewhere a model failing int8 gets float32.
  if (isa == "avx512_bf16") {
    return {{WeightFormat::kInt8, WeightFormat::kBFloat16, WeightFormat::kFloat32},
            "avx512_bf16: int8 on vpdpbusd, bfloat16 on vdpbf16ps"};
  }
  if (isa == "avx512_vnni") {
    return {{WeightFormat::kInt8, WeightFormat::kFloat32}, "avx512_vnni: int8 on vpdpbusd"};
  }
  if (isa == "avx512" || isa == "avx2") {
    return {{WeightFormat::kInt8, WeightFormat::kFloat32}, std::string(isa) + ": int8 on vpmaddwd"};
  }
  return {{WeightFormat::kFloat32}, std::string(isa) + ": not a level of this build"};
}

}  // namespace transerve
