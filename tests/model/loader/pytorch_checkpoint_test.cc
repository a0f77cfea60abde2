// The pytorch_model.bin reader: both torch.save formats read to the same tensors as their
// safetensors twins, bit for bit; a .bin-only model directory translates like the safetensors
// one; and hostile or broken pickles and archives are refused with a message, never run.
#include "model/loader/pytorch_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "model/loader/marian_loader.h"
#include "model/loader/restricted_unpickler.h"
#include "model/loader/safetensors.h"
#include "model/translator/translator.h"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;  // "\x00"s keeps its NUL bytes

const fs::path kFixtures = fs::path(testing::SourceDir()) / "tests/fixtures";
const fs::path kPytorch = kFixtures / "pytorch";

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> Values(const CheckpointFile& file, const std::string& name) {
  const CheckpointTensorInfo* info = file.Find(name);
  int64_t n = 1;
  for (int64_t d : info->shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  EXPECT_TRUE(file.ReadAsFloat32(name, out).ok()) << name;
  return out;
}

// Bit-for-bit equality (NaN-safe, and -0 differs from +0).
void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  if (a.empty()) return;  // memcmp may not be given the null data() of an empty vector
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("transerve_pytorch_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  absl::Status OpenBytes(const std::string& bytes) {
    return PytorchCheckpoint::Open(Write("t.bin", bytes)).status();
  }
  fs::path dir_;
};

void ExpectRefused(const absl::Status& s, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

// --- Both formats against their twins ---

struct Twin {
  std::string bin, safetensors, format;
};

class TwinTest : public ::testing::TestWithParam<Twin> {};

TEST_P(TwinTest, EveryTensorEqualsTheSafetensorsTwinBitForBit) {
  auto bin = PytorchCheckpoint::Open((kFixtures / GetParam().bin).string());
  ASSERT_TRUE(bin.ok()) << bin.status();
  EXPECT_EQ((*bin)->format(), GetParam().format);
  auto twin = SafetensorsFile::Open((kFixtures / GetParam().safetensors).string());
  ASSERT_TRUE(twin.ok()) << twin.status();
  for (const std::string& name : twin->Names()) {
    const CheckpointTensorInfo* info = (*bin)->Find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->dtype, twin->Find(name)->dtype) << name;
    EXPECT_EQ(info->shape, twin->Find(name)->shape) << name;
    ExpectSameBits(Values(**bin, name), Values(*twin, name), name);
  }
  // The .bin may hold more names only as Hugging Face's aliases of the shared embedding.
  for (const std::string& name : (*bin)->Names()) {
    if (twin->Find(name) != nullptr) continue;
    ASSERT_NE(twin->Find("model.shared.weight"), nullptr) << name;
    ExpectSameBits(Values(**bin, name), Values(*twin, "model.shared.weight"), name);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, TwinTest,
    ::testing::Values(Twin{"pytorch/mixed.zip.bin", "pytorch/mixed.safetensors", "zip"},
                      Twin{"pytorch/mixed.legacy.bin", "pytorch/mixed.safetensors", "legacy"},
                      Twin{"pytorch/tiny-marian.zip.bin", "tiny-marian/model/model.safetensors",
                           "zip"},
                      Twin{"pytorch/tiny-marian-variant.legacy.bin",
                           "tiny-marian-variant/model/model.safetensors", "legacy"}),
    [](const auto& info) {
      std::string n = info.param.bin.substr(8);
      for (char& c : n) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

TEST(PytorchCheckpointTest, MixedFixtureHasEveryDtypeTiedNamesAndOffsetViews) {
  for (const char* name : {"mixed.zip.bin", "mixed.legacy.bin"}) {
    auto file = PytorchCheckpoint::Open((kPytorch / name).string());
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ((*file)->Find("f32")->dtype, "F32");
    EXPECT_EQ((*file)->Find("f16")->dtype, "F16");
    EXPECT_EQ((*file)->Find("bf16")->dtype, "BF16");
    EXPECT_EQ((*file)->Find("scalar")->shape, std::vector<int64_t>{});
    EXPECT_EQ(Values(**file, "scalar"), std::vector<float>{1.5f});
    EXPECT_EQ((*file)->Find("empty")->shape, (std::vector<int64_t>{0, 3}));
    const std::vector<float> base = Values(**file, "base");
    ExpectSameBits(Values(**file, "base_again"), base, "tied names");
    ExpectSameBits(Values(**file, "slice"), std::vector<float>(base.begin() + 2, base.begin() + 8),
                   "a view at storage offset 2");
  }
}

// --- The loader ---

class BinOnlyDirectoryTest : public TempDir, public ::testing::WithParamInterface<Twin> {};

TEST_P(BinOnlyDirectoryTest, TranslatesLikeTheSafetensorsDirectory) {
  const fs::path fixture = kFixtures / GetParam().safetensors;  // the model directory
  fs::copy(fixture, dir_ / "model");
  fs::remove(dir_ / "model/model.safetensors");
  fs::copy_file(kPytorch / GetParam().bin, dir_ / "model/pytorch_model.bin");

  const nlohmann::json expected =
      nlohmann::json::parse(ReadAll(fixture.parent_path() / "expected.json"));
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : expected["cases"]) {
    sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
  }
  auto from_safetensors = Translator::Create({.model_dir = fixture.string(), .device = "cpu"});
  ASSERT_TRUE(from_safetensors.ok()) << from_safetensors.status();
  auto from_bin = Translator::Create({.model_dir = (dir_ / "model").string(), .device = "cpu"});
  ASSERT_TRUE(from_bin.ok()) << from_bin.status();
  for (int beam : {1, 4}) {
    DecodingOptions options;
    options.beam_size = beam;
    options.max_length = expected["max_length"].get<int>();
    auto a = (*from_safetensors)->TranslateIds(sources, options);
    auto b = (*from_bin)->TranslateIds(sources, options);
    ASSERT_TRUE(a.ok() && b.ok());
    for (size_t i = 0; i < sources.size(); ++i) {
      EXPECT_EQ((*a)[i].hypotheses[0].ids, (*b)[i].hypotheses[0].ids)
          << "beam " << beam << " #" << i;
      EXPECT_EQ((*a)[i].hypotheses[0].score, (*b)[i].hypotheses[0].score) << "beam " << beam;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BinOnlyDirectoryTest,
                         ::testing::Values(Twin{"tiny-marian.zip.bin", "tiny-marian/model", "zip"},
                                           Twin{"tiny-marian-variant.legacy.bin",
                                                "tiny-marian-variant/model", "legacy"}),
                         [](const auto& info) { return info.param.format; });

TEST_F(TempDir, SafetensorsIsPreferredWhenBothArePresent) {
  fs::copy(kFixtures / "tiny-marian/model", dir_ / "model");
  std::ofstream(dir_ / "model/pytorch_model.bin") << "not a checkpoint";
  EXPECT_TRUE(LoadMarianModel((dir_ / "model").string()).ok());
  fs::remove(dir_ / "model/model.safetensors");
  ExpectRefused(LoadMarianModel((dir_ / "model").string()).status(), {"pytorch_model.bin"});
}

// --- Hostile and broken inputs ---

// Writes pickle opcodes (protocol 2) by hand.
class Pickle {
 public:
  Pickle& Op(char c) { return Raw(std::string(1, c)); }
  Pickle& Raw(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  Pickle& Str(const std::string& s) {
    Op('X');
    for (int i = 0; i < 4; ++i) bytes_ += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    return Raw(s);
  }
  Pickle& Int(int64_t v) {  // LONG1 with 8 bytes
    Raw("\x8a\x08");
    for (int i = 0; i < 8; ++i)
      bytes_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return *this;
  }
  Pickle& Global(const std::string& module, const std::string& name) {
    return Op('c').Raw(module + "\n" + name + "\n");
  }
  // _rebuild_tensor_v2(('storage', type, key, 'cpu', numel), offset, shape, stride, False, {})
  Pickle& Tensor(const std::string& type, const std::string& key, int64_t numel, int64_t offset,
                 std::vector<int64_t> shape, std::vector<int64_t> stride) {
    Global("torch._utils", "_rebuild_tensor_v2").Op('(');
    Op('(').Str("storage").Global("torch", type).Str(key).Str("cpu").Int(numel).Op('t').Op('Q');
    Int(offset).Op('(');
    for (int64_t d : shape) Int(d);
    Op('t').Op('(');
    for (int64_t s : stride) Int(s);
    return Op('t').Raw("\x89").Op('}').Op('t').Op('R');
  }
  std::string Done() { return "\x80\x02" + bytes_ + "."; }

 private:
  std::string bytes_;
};

std::string Le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A legacy torch.save file around `state` with one storage "0" of `count` elements of `data`.
std::string Legacy(const std::string& state, uint64_t count, const std::string& data) {
  const std::string magic = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.";
  const std::string protocol = Pickle().Raw("M\xe9\x03").Done();
  const std::string sys_info =
      Pickle().Op('}').Op('(').Str("little_endian").Raw("\x88").Op('u').Done();
  const std::string keys = Pickle().Op(']').Op('(').Str("0").Op('e').Done();
  return magic + protocol + sys_info + state + keys + Le64(count) + data;
}

std::string OneTensorState(int64_t numel, int64_t offset, std::vector<int64_t> shape,
                           std::vector<int64_t> stride) {
  return Pickle()
      .Global("collections", "OrderedDict")
      .Op(')')
      .Op('R')
      .Str("w")
      .Tensor("FloatStorage", "0", numel, offset, std::move(shape), std::move(stride))
      .Op('s')
      .Done();
}

TEST_F(TempDir, HandWrittenLegacyFileReads) {
  std::string data(24, '\0');
  for (int i = 0; i < 6; ++i) {
    const float v = 0.5f * static_cast<float>(i);
    std::memcpy(&data[4 * i], &v, 4);
  }
  auto file = PytorchCheckpoint::Open(
      Write("ok.bin", Legacy(OneTensorState(6, 0, {2, 3}, {3, 1}), 6, data)));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(Values(**file, "w"), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
}

TEST_F(TempDir, StorageBoundsShapesAndStridesAreChecked) {
  const std::string data(24, '\0');
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 1, {2, 3}, {3, 1}), 6, data)),
                {"t.bin", "'w'", "run past its storage"});
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 0, {2, 4}, {4, 1}), 6, data)),
                {"run past its storage"});
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 0, {2, 3}, {1, 2}), 6, data)),
                {"not contiguous"});
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 0, {2, -3}, {3, 1}), 6, data)),
                {"negative size"});
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, -1, {2, 3}, {3, 1}), 6, data)),
                {"run past its storage"});
  // The record's count disagrees with the persistent id, or runs past the file.
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 0, {2, 3}, {3, 1}), 7, data)),
                {"holds 7 elements, declared 6"});
  ExpectRefused(OpenBytes(Legacy(OneTensorState(7, 0, {7}, {1}), 7, data)),
                {"runs past the end of the file"});
  // Huge declared sizes: no allocation follows them.
  const int64_t huge = int64_t{1} << 61;
  ExpectRefused(OpenBytes(Legacy(OneTensorState(huge, 0, {huge}, {1}), huge, data)),
                {"runs past the end of the file"});
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 0, {huge, huge, huge}, {1, 1, 1}), 6, data)),
                {"overflows"});
  // An empty tensor may have huge other sizes (and any strides): no element is read.
  EXPECT_TRUE(OpenBytes(Legacy(OneTensorState(6, 0, {0, huge, huge}, {7, 7, 7}), 6, data)).ok());
  ExpectRefused(OpenBytes(Legacy(OneTensorState(6, 0, {2, 3}, {3, 1}), 6, data) + "x"),
                {"follow the last storage"});
}

TEST(RestrictedUnpicklerTest, RefusesGlobalsOutsideTheAllowList) {
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"},
           {"posix", "system"},
           {"builtins", "eval"},
           {"__builtin__", "exec"},
           {"torch.storage", "_load_from_bytes"},
           {"torch", "LongStorage"},
           {"torch._utils", "_rebuild_from_type_v2"}}) {
    const std::string p = Pickle().Global(module, name).Str("echo pwned").Op('\x85').Op('R').Done();
    auto r = RestrictedUnpickle({reinterpret_cast<const uint8_t*>(p.data()), p.size()}, "evil.bin");
    ExpectRefused(r.status(), {"evil.bin", "refused global"});
  }
  // STACK_GLOBAL (protocol 4) goes through the same allow-list.
  const std::string p = "\x80\x04" + Pickle().Str("os").Str("system").Raw("\x93").Done().substr(2);
  ExpectRefused(
      RestrictedUnpickle({reinterpret_cast<const uint8_t*>(p.data()), p.size()}, "e").status(),
      {"refused global 'os.system'"});
}

absl::Status Unpickle(const std::string& p) {
  return RestrictedUnpickle({reinterpret_cast<const uint8_t*>(p.data()), p.size()}, "x.pkl")
      .status();
}

TEST(RestrictedUnpicklerTest, RefusesWhatTorchSaveNeverWrites) {
  // REDUCE of an allowed global that is not a callable, or with the wrong arguments.
  ExpectRefused(Unpickle(Pickle().Global("torch", "FloatStorage").Op(')').Op('R').Done()),
                {"REDUCE of 'torch.FloatStorage' is not allowed"});
  ExpectRefused(
      Unpickle(Pickle().Global("collections", "OrderedDict").Str("a").Op('\x85').Op('R').Done()),
      {"OrderedDict() takes no arguments"});
  ExpectRefused(
      Unpickle(Pickle().Global("torch._utils", "_rebuild_tensor_v2").Op(')').Op('R').Done()),
      {"wrong shape"});
  ExpectRefused(Unpickle(Pickle().Str("f").Op(')').Op('R').Done()), {"REDUCE applies only"});
  // Unknown opcodes: INST, OBJ, NEWOBJ, BINBYTES, and a byte that is no opcode.
  for (char op : {'i', 'o', '\x81', 'B', '\xff'}) {
    ExpectRefused(Unpickle(Pickle().Op(op).Done()), {"not supported"});
  }
  // Persistent ids of the wrong shape.
  ExpectRefused(Unpickle(Pickle().Str("storage").Op('Q').Done()), {"refused persistent id"});
  ExpectRefused(Unpickle(Pickle()
                             .Op('(')
                             .Str("storage")
                             .Global("torch", "FloatStorage")
                             .Str("0")
                             .Str("cpu")
                             .Int(-1)
                             .Op('t')
                             .Op('Q')
                             .Done()),
                {"refused persistent id"});
  // BUILD on anything but a dict; a memo key never put; an empty stack at STOP.
  ExpectRefused(Unpickle(Pickle().Op(']').Op('}').Op('b').Done()), {"BUILD"});
  ExpectRefused(Unpickle(Pickle().Raw("h\x07").Done()), {"memo key 7"});
  ExpectRefused(Unpickle("\x80\x02."), {"STOP"});
  ExpectRefused(Unpickle(Pickle().Raw("\x80\x06").Done()), {"protocol 6"});
  // Blow-ups stay bounded: a million MARKs, and a list appended to itself (no cycle of owners).
  ExpectRefused(Unpickle(Pickle().Raw(std::string(2'000'000, '(')).Done()), {"too many MARKs"});
  std::string self = Pickle().Op(']').Raw("q\x00"s).Done();
  self.pop_back();
  for (int i = 0; i < 1000; ++i) self += "h\x00"s + "a";
  EXPECT_TRUE(Unpickle(self + ".").ok());
}

TEST(RestrictedUnpicklerTest, EveryTruncationOfARealPickleIsAnError) {
  const std::string zip = ReadAll(kPytorch / "mixed.zip.bin");
  const size_t at = zip.find(
      "\x80\x02"
      "ccollections");
  ASSERT_NE(at, std::string::npos);
  const std::string rest = zip.substr(at);
  auto whole =
      RestrictedUnpickle({reinterpret_cast<const uint8_t*>(rest.data()), rest.size()}, "p");
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t n = 0; n < whole->end; ++n) {
    ExpectRefused(Unpickle(rest.substr(0, n)), {"x.pkl"});
  }
}

TEST_F(TempDir, EveryTruncationOfBothFormatsIsRefused) {
  for (const char* name : {"mixed.zip.bin", "mixed.legacy.bin"}) {
    const std::string bytes = ReadAll(kPytorch / name);
    for (size_t n = 0; n < bytes.size(); ++n) {
      const absl::Status s = OpenBytes(bytes.substr(0, n));
      ASSERT_FALSE(s.ok()) << name << " cut at " << n;
      ASSERT_NE(s.message().find("t.bin"), std::string::npos) << s;
    }
  }
}

// Patches the first occurrence of `from` in the archive (the same length, so offsets hold).
std::string Patched(std::string bytes, const std::string& from, const std::string& to) {
  const size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << "pattern not found";
  if (at != std::string::npos) bytes.replace(at, from.size(), to);
  return bytes;
}

TEST_F(TempDir, ZipArchivesAreCheckedEntryByEntry) {
  const std::string zip = ReadAll(kPytorch / "mixed.zip.bin");
  ASSERT_TRUE(OpenBytes(zip).ok());
  // The central directory entry of data.pkl claims deflate (method 8).
  const size_t central = zip.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  std::string compressed = zip;
  compressed[central + 10] = 8;
  ExpectRefused(OpenBytes(compressed), {"compressed (method 8)"});
  std::string encrypted = zip;
  encrypted[central + 8] |= 1;
  ExpectRefused(OpenBytes(encrypted), {"encrypted"});
  // f32 is storage 0 with 12 elements: declare 13, offset it by one, or make it non-contiguous.
  ExpectRefused(OpenBytes(Patched(zip,
                                  "cpu"
                                  "q\x07K\x0ct",
                                  "cpu"
                                  "q\x07K\x0dt")),
                {"declares 13 F32 elements but its entry holds 48 bytes"});
  ExpectRefused(OpenBytes(Patched(zip, "QK\x00K\x03K\x04"s, "QK\x01K\x03K\x04"s)),
                {"'f32'", "run past its storage"});
  ExpectRefused(OpenBytes(Patched(zip, "K\x04K\x01\x86", "K\x01K\x03\x86")), {"not contiguous"});
  ExpectRefused(OpenBytes(Patched(zip, "torch\nFloatStorage", "posix\nFloatStorage")),
                {"refused global 'posix.FloatStorage'"});
  ExpectRefused(OpenBytes("PK\x03\x04 not really a zip"), {"end of central directory"});
  ExpectRefused(OpenBytes("GIF89a"), {"neither"});
}

}  // namespace
}  // namespace transerve
