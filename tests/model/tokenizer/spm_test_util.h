// Test helpers around the SentencePiece command-line tools (spm_train, spm_encode, spm_decode from
// Debian's `sentencepiece` package): finding them, running them, scratch directories.
#ifndef TRANSERVE_TESTS_MODEL_TOKENIZER_SPM_TEST_UTIL_H_
#define TRANSERVE_TESTS_MODEL_TOKENIZER_SPM_TEST_UTIL_H_

#include <string>
#include <string_view>
#include <vector>

namespace transerve::testing {

// Absolute path of `name` found on $PATH, or "" when it is not installed.
std::string FindOnPath(std::string_view name);

// "" when spm_train, spm_encode and spm_decode are all on $PATH; otherwise a message naming the
// missing ones and saying to run scripts/setup.sh.
std::string MissingSpmToolsMessage();

// Quotes `s` for /bin/sh.
std::string ShellQuote(std::string_view s);

// Runs `command` with /bin/sh; returns its exit status (-1 if it did not exit normally).
int RunShell(const std::string& command);

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Whole-file helpers; they abort the test binary on I/O errors (a broken temp dir is not a result).
std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, std::string_view contents);

// Writes `lines` joined by '\n' (with a final '\n'), the input format the spm tools read.
void WriteLines(const std::string& path, const std::vector<std::string>& lines);
// Splits on '\n' exactly as std::getline does (no trailing empty line after a final '\n').
std::vector<std::string> SplitLines(std::string_view text);

// Trains <dir>/<name>.model from `corpus` with spm_train and the given extra flags. Returns "" on
// success, else an error message with spm_train's log.
std::string TrainSpmModel(const std::string& dir, const std::string& name,
                          const std::string& corpus, const std::string& flags);

// Makes control and non-UTF-8 bytes visible in failure messages.
std::string Escape(std::string_view s);

}  // namespace transerve::testing

#endif  // TRANSERVE_TESTS_MODEL_TOKENIZER_SPM_TEST_UTIL_H_
