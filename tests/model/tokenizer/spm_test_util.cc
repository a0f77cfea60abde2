// Implementation of the spm CLI test helpers (POSIX: system(3), mkdtemp(3)).
#include "tests/model/tokenizer/spm_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace transerve::testing {

std::string FindOnPath(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(dirs);
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string MissingSpmToolsMessage() {
  std::string missing;
  for (const char* tool : {"spm_train", "spm_encode", "spm_decode"}) {
    if (FindOnPath(tool).empty()) missing += std::string(missing.empty() ? "" : ", ") + tool;
  }
  if (missing.empty()) return "";
  return missing +
         " not found on PATH: the tokenizer oracle needs Debian's `sentencepiece` package; run "
         "scripts/setup.sh";
}

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

int RunShell(const std::string& command) {
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

ScratchDir::ScratchDir(std::string_view prefix) {
  std::string templ =
      (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    std::abort();
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileOrDie(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) {
    std::cerr << "cannot write " << path << "\n";
    std::abort();
  }
}

void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) {
    text += line;
    text += '\n';
  }
  WriteFileOrDie(path, text);
}

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

std::string TrainSpmModel(const std::string& dir, const std::string& name,
                          const std::string& corpus, const std::string& flags) {
  const std::string log = dir + "/" + name + ".train.log";
  // One thread: the machines running the tests are small and shared.
  const std::string cmd = "spm_train --input=" + ShellQuote(corpus) +
                          " --model_prefix=" + ShellQuote(dir + "/" + name) +
                          " --num_threads=1 --minloglevel=1 " + flags + " > " + ShellQuote(log) +
                          " 2>&1";
  if (RunShell(cmd) == 0) return "";
  std::string text;
  if (std::filesystem::exists(log)) text = ReadFileOrDie(log);
  return "spm_train failed: " + cmd + "\n" + text;
}

std::string Escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace transerve::testing
