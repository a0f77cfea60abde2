#include "model/layers/transformer_weights.h"

#include <unordered_set>

namespace transerve {
namespace {

void Pack(LinearWeights* w, ops::WeightFormat format) {
  if (w->weight.empty()) return;  // packed already
  w->packed = ops::PackMatrix(w->weight, format);
  w->weight = Tensor();
}

bool SameStorage(const Tensor& a, const Tensor& b) {
  return !a.empty() && a.data<char>() == b.data<char>();
}

LinearWeights CopyLinear(const LinearWeights& w, Device device, DType dtype) {
  LinearWeights out;
  if (dtype == DType::kFloat16) {
    out.weight = ops::ToFloat16Linear(w.weight, w.bias);  // the bias goes inside
    return out;
  }
  out.weight = ops::CopyTo(w.weight, device);
  if (!w.bias.empty()) out.bias = ops::CopyTo(w.bias, device);
  return out;
}

LayerNormWeights CopyNorm(const LayerNormWeights& n, Device device) {
  if (!n.present()) return {};
  return {ops::CopyTo(n.gamma, device), ops::CopyTo(n.beta, device)};
}

}  // namespace

TransformerWeights CopyWeightsTo(const TransformerWeights& w, Device device, DType dtype) {
  TransformerWeights out;
  out.encoder_embedding = ops::CopyTo(w.encoder_embedding, device);
  out.decoder_embedding = ops::CopyTo(w.decoder_embedding, device);
  out.encoder_positions = ops::CopyTo(w.encoder_positions, device);
  out.decoder_positions = ops::CopyTo(w.decoder_positions, device);
  out.output = CopyLinear(w.output, device, dtype);
  out.cross_kv = CopyLinear(w.cross_kv, device, dtype);
  for (const EncoderLayerWeights& l : w.encoder) {
    out.encoder.push_back({CopyLinear(l.self_qkv, device, dtype),
                           CopyLinear(l.self_out, device, dtype),
                           CopyNorm(l.self_attn_norm, device), CopyLinear(l.fc1, device, dtype),
                           CopyLinear(l.fc2, device, dtype), CopyNorm(l.final_norm, device)});
  }
  for (const DecoderLayerWeights& l : w.decoder) {
    out.decoder.push_back({CopyLinear(l.self_qkv, device, dtype),
                           CopyLinear(l.self_out, device, dtype),
                           CopyNorm(l.self_attn_norm, device), CopyLinear(l.cross_q, device, dtype),
                           CopyLinear(l.cross_out, device, dtype),
                           CopyNorm(l.cross_attn_norm, device), CopyLinear(l.fc1, device, dtype),
                           CopyLinear(l.fc2, device, dtype), CopyNorm(l.final_norm, device)});
  }
  out.encoder_embedding_norm = CopyNorm(w.encoder_embedding_norm, device);
  out.decoder_embedding_norm = CopyNorm(w.decoder_embedding_norm, device);
  out.encoder_final_norm = CopyNorm(w.encoder_final_norm, device);
  out.decoder_final_norm = CopyNorm(w.decoder_final_norm, device);
  return out;
}

namespace {

class StorageCounter {
 public:
  void Add(const Tensor& t) {
    if (t.empty() || !seen_.insert(t.data<char>()).second) return;
    bytes_ += static_cast<int64_t>(t.capacity_bytes());
  }
  void Add(const ops::PackedMatrix& p) {
    Add(p.panels);
    Add(p.scales);
    Add(p.column_sums);
  }
  void Add(const LinearWeights& l) {
    Add(l.weight);
    Add(l.bias);
    Add(l.packed);
  }
  void Add(const LayerNormWeights& n) {
    Add(n.gamma);
    Add(n.beta);
  }
  int64_t bytes() const { return bytes_; }

 private:
  std::unordered_set<const char*> seen_;
  int64_t bytes_ = 0;
};

}  // namespace

int64_t StorageBytes(const TransformerWeights& w) {
  StorageCounter count;
  for (const Tensor* t :
       {&w.encoder_embedding, &w.decoder_embedding, &w.encoder_positions, &w.decoder_positions}) {
    count.Add(*t);
  }
  count.Add(w.encoder_embedding_packed);
  count.Add(w.decoder_embedding_packed);
  count.Add(w.output);
  count.Add(w.cross_kv);
  for (const EncoderLayerWeights& l : w.encoder) {
    for (const LinearWeights* x : {&l.self_qkv, &l.self_out, &l.fc1, &l.fc2}) count.Add(*x);
    count.Add(l.self_attn_norm);
    count.Add(l.final_norm);
  }
  for (const DecoderLayerWeights& l : w.decoder) {
    for (const LinearWeights* x :
         {&l.self_qkv, &l.self_out, &l.cross_q, &l.cross_out, &l.fc1, &l.fc2}) {
      count.Add(*x);
    }
    count.Add(l.self_attn_norm);
    count.Add(l.cross_attn_norm);
    count.Add(l.final_norm);
  }
  for (const LayerNormWeights* n : {&w.encoder_embedding_norm, &w.decoder_embedding_norm,
                                    &w.encoder_final_norm, &w.decoder_final_norm}) {
    count.Add(*n);
  }
  return count.bytes();
}

void PackTables(TransformerWeights* w, ops::WeightFormat format) {
  const bool decoder_tied = SameStorage(w->decoder_embedding, w->output.weight);
  const bool encoder_tied = SameStorage(w->encoder_embedding, w->decoder_embedding);
  Pack(&w->output, format);
  if (format == ops::WeightFormat::kFloat32 || w->decoder_embedding.empty()) return;
  w->decoder_embedding_packed =
      decoder_tied ? w->output.packed : ops::PackMatrix(w->decoder_embedding, format);
  w->encoder_embedding_packed =
      encoder_tied ? w->decoder_embedding_packed : ops::PackMatrix(w->encoder_embedding, format);
  w->decoder_embedding = Tensor();
  w->encoder_embedding = Tensor();
}

void PackLayer(EncoderLayerWeights* layer, ops::WeightFormat format) {
  for (LinearWeights* w : {&layer->self_qkv, &layer->self_out, &layer->fc1, &layer->fc2}) {
    Pack(w, format);
  }
}

void PackLayer(DecoderLayerWeights* layer, ops::WeightFormat format) {
  for (LinearWeights* w : {&layer->self_qkv, &layer->self_out, &layer->cross_q, &layer->cross_out,
                           &layer->fc1, &layer->fc2}) {
    Pack(w, format);
  }
}

void PackWeights(TransformerWeights* weights, ops::WeightFormat format) {
  PackTables(weights, format);
  for (EncoderLayerWeights& layer : weights->encoder) PackLayer(&layer, format);
  for (DecoderLayerWeights& layer : weights->decoder) PackLayer(&layer, format);
  Pack(&weights->cross_kv, format);
}

}  // namespace transerve
