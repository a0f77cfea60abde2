// The one whole-file reader: exact contents, and a clear error, never a hang, for what is not a
// readable regular file (model directories and configuration paths come from users).
#include "model/core/read_file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace transerve {
namespace {

using ::testing::HasSubstr;

class ReadWholeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("transerve_read_file_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(ReadWholeFileTest, ReturnsEveryByteOfRandomFiles) {
  std::mt19937 rng(5);
  // Empty, shorter than the read buffer, and across several buffers with a partial last one.
  for (size_t size : {size_t{0}, size_t{1}, size_t{4097}, size_t{(1 << 16) * 3 + 17}}) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 255 + 1);
    const std::string path = Path("random_" + std::to_string(size));
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(size));
    auto read = ReadWholeFile(path, "test file");
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, bytes) << size;
  }
}

TEST_F(ReadWholeFileTest, AMissingFileIsNotFoundAndNamed) {
  auto read = ReadWholeFile(Path("nope.json"), "vocabulary");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("cannot read vocabulary"));
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("nope.json"));
}

TEST_F(ReadWholeFileTest, ADirectoryIsRefused) {
  auto read = ReadWholeFile(dir_.string(), "tokenizer settings");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("directory"));
}

// A FIFO (or a device) named as a model file would block or never end; it is refused at once.
TEST_F(ReadWholeFileTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = Path("config.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // O_RDONLY on a FIFO blocks until a writer opens it: open one first, so a reader that did
  // not check the file's kind would block in read() instead, and the test would hang there.
  const int writer = ::open(fifo.c_str(), O_RDWR);
  ASSERT_GE(writer, 0);
  auto read = ReadWholeFile(fifo, "JSON file");
  ::close(writer);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace transerve
