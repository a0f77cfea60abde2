#include "bench/onednn_matmul.h"

#ifdef TRANSERVE_HAVE_DNNL
#include <algorithm>
#include <bit>
#include <cmath>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/core/half.h"

namespace transerve::bench {
namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

class Matmul : public OneDnnMatmul {
 public:
  Matmul(const Tensor& weight, const Tensor& bias, ops::WeightFormat format, int64_t rows)
      : format_(format), rows_(rows), n_(weight.dim(0)), k_(weight.dim(1)), stream_(Engine()) {
    const dt data = format == ops::WeightFormat::kInt8       ? dt::s8
                    : format == ops::WeightFormat::kBFloat16 ? dt::bf16
                                                             : dt::f32;
    const memory::desc src({rows_, k_}, data, tag::ab);
    const memory::desc weights_any({k_, n_}, data, tag::any);
    const memory::desc bias_md({1, n_}, dt::f32, tag::ab);
    const memory::desc dst({rows_, n_}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    // The user's weights: [N, K] row-major is {K, N} in the "ba" layout.
    std::vector<int8_t> quantized;
    std::vector<uint16_t> halves;
    memory user;
    if (format == ops::WeightFormat::kInt8) {
      quantized.resize(static_cast<size_t>(n_ * k_));
      std::vector<float> scales(static_cast<size_t>(n_));
      for (int64_t n = 0; n < n_; ++n) {
        const float* row = weight.f32() + n * k_;
        float max_abs = 0;
        for (int64_t i = 0; i < k_; ++i) max_abs = std::max(max_abs, std::fabs(row[i]));
        const float inverse = max_abs > 0 ? 127.0f / max_abs : 0.0f;
        for (int64_t i = 0; i < k_; ++i) {
          quantized[n * k_ + i] = static_cast<int8_t>(std::nearbyint(row[i] * inverse));
        }
        scales[n] = max_abs / 127.0f;  // the source's own scale is left out: timing only
      }
      attr.set_output_scales(/*mask: per output column*/ 1 << 1, scales);
      user = memory({{k_, n_}, dt::s8, tag::ba}, Engine(), quantized.data());
    } else if (format == ops::WeightFormat::kBFloat16) {
      halves.resize(static_cast<size_t>(n_ * k_));
      for (int64_t i = 0; i < n_ * k_; ++i) halves[i] = FloatToBFloat16(weight.f32()[i]);
      user = memory({{k_, n_}, dt::bf16, tag::ba}, Engine(), halves.data());
    } else {
      user = memory({{k_, n_}, dt::f32, tag::ba}, Engine(), const_cast<float*>(weight.f32()));
    }
    const dnnl::matmul::desc desc(src, weights_any, bias_md, dst);
    pd_ = dnnl::matmul::primitive_desc(desc, attr, Engine());
    weights_ = memory(pd_.weights_desc(), Engine());
    dnnl::reorder(user, weights_).execute(stream_, user, weights_);
    bias_ = memory(bias_md, Engine(), const_cast<float*>(bias.f32()));
    src_ = memory(pd_.src_desc(), Engine());
    matmul_ = dnnl::matmul(pd_);
    stream_.wait();
  }

  void Run(const Tensor& x, Tensor* y) override {
    y->Resize({rows_, n_});
    const float* in = x.f32();
    if (format_ == ops::WeightFormat::kInt8) {
      float max_abs = 0;
      for (int64_t i = 0; i < rows_ * k_; ++i) max_abs = std::max(max_abs, std::fabs(in[i]));
      const float inverse = max_abs > 0 ? 127.0f / max_abs : 0.0f;
      int8_t* q = static_cast<int8_t*>(src_.get_data_handle());
      for (int64_t i = 0; i < rows_ * k_; ++i)
        q[i] = static_cast<int8_t>(std::nearbyint(in[i] * inverse));
    } else if (format_ == ops::WeightFormat::kBFloat16) {
      uint16_t* h = static_cast<uint16_t*>(src_.get_data_handle());
      for (int64_t i = 0; i < rows_ * k_; ++i) h[i] = FloatToBFloat16(in[i]);
    } else {
      src_.set_data_handle(const_cast<float*>(in));
    }
    memory dst(pd_.dst_desc(), Engine(), y->f32());
    matmul_.execute(stream_, {{DNNL_ARG_SRC, src_},
                              {DNNL_ARG_WEIGHTS, weights_},
                              {DNNL_ARG_BIAS, bias_},
                              {DNNL_ARG_DST, dst}});
    stream_.wait();
  }

 private:
  ops::WeightFormat format_;
  int64_t rows_, n_, k_;
  dnnl::stream stream_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul matmul_;
  memory weights_, bias_, src_;
};

}  // namespace

std::unique_ptr<OneDnnMatmul> OneDnnMatmul::Create(const Tensor& weight, const Tensor& bias,
                                                   ops::WeightFormat format, int64_t rows) {
  try {
    return std::make_unique<Matmul>(weight, bias, format, rows);
  } catch (const dnnl::error&) {
    return nullptr;  // a format this CPU's oneDNN does not implement
  }
}

std::string OneDnnDescription() {
  const dnnl_version_t* v = dnnl_version();
  return absl::StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (",
                      v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other", " threads)");
}

}  // namespace transerve::bench

#else  // no oneDNN

namespace transerve::bench {

std::unique_ptr<OneDnnMatmul> OneDnnMatmul::Create(const Tensor&, const Tensor&, ops::WeightFormat,
                                                   int64_t) {
  return nullptr;
}

std::string OneDnnDescription() {
  return "oneDNN not measured (Debian's libdnnl-dev was not found at build time)";
}

}  // namespace transerve::bench

#endif
