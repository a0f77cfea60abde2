// dtype=auto on the CPU: the level's formats tried best first (AutoCpuDtypesFor), each
// low-precision one kept only if it passes the quality check against a float32 copy of the
// model loaded for the check alone and freed before it (docs/engine.md, "dtype=auto").
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/core/logging.h"
#include "model/translator/auto_dtype.h"
#include "model/translator/model_directory.h"
#include "model/translator/quality_check.h"
#include "model/translator/translator.h"

namespace transerve {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<Translator::AutoLoad> Translator::LoadAutoCpu(const std::string& model_dir) {
  using ops::WeightFormat;
  const AutoCpuDtypes plan = AutoCpuDtypesFor(ops::CpuIsa());
  auto load_float32 = [&]() -> absl::StatusOr<std::shared_ptr<const MarianModel>> {
    auto loaded = LoadModelDirectory(model_dir, WeightFormat::kFloat32);
    if (!loaded.ok()) return loaded.status();
    return std::shared_ptr<const MarianModel>(*std::move(loaded));
  };
  if (plan.formats.front() == WeightFormat::kFloat32) {
    auto model = load_float32();
    if (!model.ok()) return model.status();
    return AutoLoad{*std::move(model), WeightFormat::kFloat32,
                    absl::StrCat("auto: float32 (", plan.reason, ")")};
  }
  // The float32 reference decodes the check's sources once and is freed before any candidate
  // loads: the load never holds two models, so its peak is float32's own.
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<int32_t>> sources;
  ReferenceSteps reference;
  {
    auto model = load_float32();
    if (!model.ok()) return model.status();
    auto translator = ForCheck(*model, WeightFormat::kFloat32);
    if (!translator.ok()) return translator.status();
    sources = QualityCheckSources(**translator);
    auto steps = RecordReference(**translator, sources);
    if (!steps.ok()) return steps.status();
    reference = *std::move(steps);
  }
  std::string checks;  // each check's figures, in the order they ran
  for (const WeightFormat format : plan.formats) {
    const std::string name(ops::WeightFormatName(format));
    if (format == WeightFormat::kFloat32) {
      auto model = load_float32();  // again: every low-precision format failed
      if (!model.ok()) return model.status();
      return AutoLoad{*std::move(model), format,
                      absl::StrCat("auto: float32 (", plan.reason, checks, ")")};
    }
    auto loaded = LoadModelDirectory(model_dir, format);
    if (!loaded.ok()) return loaded.status();
    std::shared_ptr<const MarianModel> candidate = *std::move(loaded);
    auto translator = ForCheck(candidate, format);
    if (!translator.ok()) return translator.status();
    auto check = CompareWithReference(**translator, sources, reference);
    if (!check.ok()) return check.status();
    const bool passed = check->passed();
    absl::StrAppend(&checks, "; ", name, " check ",
                    passed ? "passed: " : "failed: ", check->Describe());
    if (passed) {
      Log().info(
          "{}: {} passed the quality check against float32 ({}; {:.2f} s with the float32 "
          "reference)",
          model_dir, name, check->Describe(), SecondsSince(start));
      return AutoLoad{std::move(candidate), format,
                      absl::StrCat("auto: ", name, " (", plan.reason, checks, ")")};
    }
    Log().warn("{}: {} failed the quality check against float32 ({}): not using it", model_dir,
               name, check->Describe());
  }
  return absl::InternalError("dtype auto: no format to load");  // the plan ends with float32
}

}  // namespace transerve
