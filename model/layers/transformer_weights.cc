#include "model/layers/transformer_weights.h"

namespace transerve {
namespace {

void Pack(LinearWeights* w) {
  w->packed = ops::PackMatrix(w->weight);
  w->weight = Tensor();
}

}  // namespace

void PackWeights(TransformerWeights* weights) {
  for (EncoderLayerWeights& layer : weights->encoder) {
    for (LinearWeights* w : {&layer.self_qkv, &layer.self_out, &layer.fc1, &layer.fc2}) Pack(w);
  }
  for (DecoderLayerWeights& layer : weights->decoder) {
    for (LinearWeights* w : {&layer.self_qkv, &layer.self_out, &layer.cross_q, &layer.cross_out,
                             &layer.fc1, &layer.fc2}) {
      Pack(w);
    }
  }
  Pack(&weights->cross_kv);
  Pack(&weights->output);  // a tied output weight is the decoder embedding: that copy stays
}

}  // namespace transerve
