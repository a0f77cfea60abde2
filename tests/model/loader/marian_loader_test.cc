// The Marian checkpoint loader: each broken checkpoint gives an error naming the file and the
// tensor; the accepted layout variants load to the same weights.
#include "model/loader/marian_loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "model/loader/safetensors.h"
#include "model/loader/safetensors_writer.h"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

const fs::path kFixture = fs::path(testing::SourceDir()) / "tests/fixtures/tiny-marian/model";

class MarianLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("transerve_loader_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(kFixture, dir_);
    auto file = SafetensorsFile::Open((kFixture / "model.safetensors").string());
    ASSERT_TRUE(file.ok()) << file.status();
    for (const std::string& name : file->Names()) {
      auto values = file->ReadAsFloat32(name);
      ASSERT_TRUE(values.ok());
      tensors_.push_back({name, "F32", file->Find(name)->shape, *values, ""});
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  NamedTensor* Tensor(const std::string& name) {
    for (auto& t : tensors_) {
      if (t.name == name) return &t;
    }
    ADD_FAILURE() << "fixture has no " << name;
    return nullptr;
  }
  void Write(const std::map<std::string, std::string>& metadata = {}) {
    ASSERT_TRUE(WriteSafetensors(weights_path(), tensors_, metadata).ok());
  }
  std::string weights_path() const { return (dir_ / "model.safetensors").string(); }
  absl::Status Load() { return LoadMarianModel(dir_.string()).status(); }

  fs::path dir_;
  std::vector<NamedTensor> tensors_;
};

void ExpectErrorMentions(const absl::Status& s, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(s.ok());
  for (const auto& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

TEST_F(MarianLoaderTest, RewrittenFixtureLoads) {
  Write();
  EXPECT_TRUE(Load().ok()) << Load();
}

TEST_F(MarianLoaderTest, MissingTensorIsNamed) {
  const std::string name = "model.decoder.layers.1.fc1.weight";
  std::erase_if(tensors_, [&](const NamedTensor& t) { return t.name == name; });
  Write();
  ExpectErrorMentions(Load(), {"model.safetensors", "missing tensor", name});
}

TEST_F(MarianLoaderTest, MisShapedTensorIsNamedWithBothShapes) {
  const std::string name = "model.encoder.layers.0.self_attn.q_proj.weight";
  NamedTensor* t = Tensor(name);
  const int64_t d = t->shape[0];
  t->shape = {d / 2, 2 * d};
  Write();
  ExpectErrorMentions(Load(), {name, "shape", "expected"});
}

TEST_F(MarianLoaderTest, UnsupportedDtypeIsNamed) {
  const std::string name = "model.encoder.layers.0.fc2.bias";
  NamedTensor* t = Tensor(name);
  t->dtype = "I32";
  t->raw.assign(t->values.size() * 4, '\1');
  t->values.clear();
  Write();
  ExpectErrorMentions(Load(), {name, "I32"});
}

// NaN or infinity anywhere in the weights (a random tensor, a random element, in F32 and F16):
// the load fails naming the tensor, rather than serving garbage.
TEST_F(MarianLoaderTest, NonFiniteWeightsAreRejectedNamingTheTensor) {
  std::mt19937 rng(8);
  const std::vector<NamedTensor> clean = tensors_;
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    for (const std::string dtype : {"F32", "F16"}) {
      tensors_ = clean;
      NamedTensor* t = nullptr;
      do {
        t = &tensors_[rng() % tensors_.size()];
      } while (t->values.empty() || t->name.find("final_logits_bias") != std::string::npos);
      for (auto& each : tensors_) each.dtype = dtype;
      t->values[rng() % t->values.size()] = bad;
      Write();
      ExpectErrorMentions(Load(), {"model.safetensors", t->name, "corrupt"});
    }
  }
  // -inf in final_logits_bias forbids a token: allowed. NaN there is not.
  tensors_ = clean;
  Tensor("final_logits_bias")->values[3] = -INFINITY;
  Write();
  EXPECT_TRUE(Load().ok()) << Load();
  Tensor("final_logits_bias")->values[3] = NAN;
  Write();
  ExpectErrorMentions(Load(), {"final_logits_bias"});
}

TEST_F(MarianLoaderTest, TruncatedFileIsAnErrorNamingTheFile) {
  Write();
  fs::resize_file(weights_path(), fs::file_size(weights_path()) - 100);
  ExpectErrorMentions(Load(), {"model.safetensors"});
}

TEST_F(MarianLoaderTest, MissingConfigKeyIsNamed) {
  std::ifstream in(dir_ / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t pos = text.find("\"d_model\"");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 9, "\"d_model_renamed\"");
  std::ofstream(dir_ / "config.json") << text;
  ExpectErrorMentions(Load(), {"config.json", "d_model"});
}

TEST_F(MarianLoaderTest, ImplausiblePositionCountIsAnErrorNotAnAllocationFailure) {
  std::ifstream in(dir_ / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t pos = text.find("\"max_position_embeddings\": 256");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 30, "\"max_position_embeddings\": 900000000");
  std::ofstream(dir_ / "config.json") << text;
  ExpectErrorMentions(Load(), {"max_position_embeddings", "implausibly large"});
}

TEST_F(MarianLoaderTest, PytorchBinIsReadWhenThereIsNoSafetensorsAndMustBeATorchSaveFile) {
  // (tests/model/loader/pytorch_checkpoint_test.cc loads real .bin files.)
  fs::rename(weights_path(), dir_ / "pytorch_model.bin");
  ExpectErrorMentions(Load(), {"pytorch_model.bin", "neither a torch.save zip archive"});
  fs::remove(dir_ / "pytorch_model.bin");
  ExpectErrorMentions(Load(), {"model.safetensors", "pytorch_model.bin", "not found"});
}

TEST_F(MarianLoaderTest, StoredPositionsMustBeTheSinusoidalTable) {
  auto model = LoadMarianModel(kFixture.string());
  ASSERT_TRUE(model.ok());
  const transerve::Tensor& table = (*model)->weights.encoder_positions;
  std::vector<float> values = table.ToFloatVector();
  tensors_.push_back({"model.encoder.embed_positions.weight", "F32", table.shape(), values, ""});
  Write();
  EXPECT_TRUE(Load().ok()) << "the exact table is accepted";
  values[5] += 0.5f;
  tensors_.back().values = values;
  Write();
  ExpectErrorMentions(Load(), {"model.encoder.embed_positions.weight", "sinusoidal"});
}

TEST_F(MarianLoaderTest, MarianModelLayoutWithoutPrefixAndMetadataAliasesLoadTheSameWeights) {
  auto original = LoadMarianModel(kFixture.string());
  ASSERT_TRUE(original.ok());
  for (auto& t : tensors_) {
    if (t.name.rfind("model.", 0) == 0) t.name = t.name.substr(6);
  }
  // The conversion bot drops aliased copies and records them in __metadata__.
  std::erase_if(tensors_, [](const NamedTensor& t) { return t.name == "shared.weight"; });
  NamedTensor renamed{"encoder.embed_tokens.weight", "F32", {}, {}, ""};
  auto file = SafetensorsFile::Open((kFixture / "model.safetensors").string());
  renamed.shape = file->Find("model.shared.weight")->shape;
  renamed.values = *file->ReadAsFloat32("model.shared.weight");
  tensors_.push_back(renamed);
  Write({{"model.shared.weight", "encoder.embed_tokens.weight"},
         {"model.decoder.embed_tokens.weight", "encoder.embed_tokens.weight"}});
  auto loaded = LoadMarianModel(dir_.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->weights.decoder_embedding.ToFloatVector(),
            (*original)->weights.decoder_embedding.ToFloatVector());
  EXPECT_EQ((*loaded)->weights.decoder[1].self_qkv.packed.panels.ToFloatVector(),
            (*original)->weights.decoder[1].self_qkv.packed.panels.ToFloatVector());
}

TEST_F(MarianLoaderTest, UntiedOutputProjectionRequiresLmHead) {
  std::ifstream in(dir_ / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t pos = text.find("\"tie_word_embeddings\": true");
  ASSERT_NE(pos, std::string::npos) << "fixture config should spell tie_word_embeddings: true";
  text.replace(pos, 27, "\"tie_word_embeddings\": false");
  std::ofstream(dir_ / "config.json") << text;
  ExpectErrorMentions(Load(), {"lm_head.weight"});
}

}  // namespace
}  // namespace transerve
