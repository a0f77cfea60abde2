// Fuzz target: the CTranslate2 model.bin reader (versions, strings, shapes, dtypes, byte counts,
// aliases) on arbitrary bytes, then the TransformerSpec loader on whatever the reader accepts,
// with vocabularies as large as its embedding tables. The reader maps files, so each input goes
// into an in-memory file (memfd) opened by path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/loader/ctranslate2_model_bin.h"
#include "model/loader/ctranslate2_transformer.h"

namespace {

// Rows of a table of the model, bounded (the vocabulary is made, not read), else `fallback`.
int64_t RowsOf(const transerve::Ct2ModelBin& model, const char* name, int64_t fallback) {
  const transerve::Ct2Variable* v = model.Find(name);
  if (v == nullptr || v->shape.empty() || v->shape[0] < 3 || v->shape[0] > 4096) return fallback;
  return v->shape[0];
}

std::shared_ptr<const transerve::Ct2Vocabulary> Vocabulary(int64_t size) {
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (static_cast<int64_t>(tokens.size()) < size)
    tokens.push_back(std::to_string(tokens.size()));
  return std::make_shared<transerve::Ct2Vocabulary>(std::move(tokens), "<unk>");
}

// The spec loader must answer every model.bin with a model or an error.
void LoadSpec(transerve::Ct2ModelBin model) {
  auto target = Vocabulary(RowsOf(model, "decoder/embeddings/weight", 8));
  auto source = model.Find("encoder/embeddings_0/weight") == model.Find("decoder/embeddings/weight")
                    ? target
                    : Vocabulary(RowsOf(model, "encoder/embeddings_0/weight", 8));
  const transerve::Ct2Directory dir{.path = "fuzz",
                                    .model = std::move(model),
                                    .source_vocabulary = std::move(source),
                                    .target_vocabulary = std::move(target)};
  auto loaded = transerve::LoadCt2Transformer(dir, std::nullopt);
  static_cast<void>(loaded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("ct2_model_bin_fuzz", 0);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (written == size) {
    auto model = transerve::Ct2ModelBin::Open("/proc/self/fd/" + std::to_string(fd));
    if (model.ok()) {
      // What the reader accepts must hold: each variable's bytes are the file's at its offset
      // (reading them all lets ASan see a span outside the mapping) and as many as its shape and
      // dtype say; each alias finds a variable.
      for (const auto& v : model->variables()) {
        uint64_t elements = 1;
        for (int64_t d : v.shape) elements *= static_cast<uint64_t>(d);
        if (v.data.size() != elements * transerve::Ct2DtypeSize(v.dtype)) __builtin_trap();
        if (v.file_offset + v.data.size() > size) __builtin_trap();
        if (!v.data.empty() && std::memcmp(v.data.data(), data + v.file_offset, v.data.size())) {
          __builtin_trap();
        }
        if (model->Find(v.name) != &v) __builtin_trap();
      }
      for (const auto& [alias, target] : model->aliases()) {
        if (model->Find(alias) == nullptr || model->Find(alias) != model->Find(target)) {
          __builtin_trap();
        }
      }
      LoadSpec(*std::move(model));
    }
  }
  close(fd);
  return 0;
}
