// transerve-spm-encode: our SentencePiece encoder as a filter, for comparing with the spm tools
// by hand. `--model=PATH` encodes stdin lines to space-joined pieces (as spm_encode
// --output_format=piece); adding `--decode` reads space-separated pieces and decodes them (as
// spm_decode --input_format=piece).
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer/sentencepiece_model.h"

int main(int argc, char** argv) {
  std::string model_path;
  bool decode = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--model=")) {
      model_path = std::string(arg.substr(8));
    } else if (arg == "--decode") {
      decode = true;
    } else {
      std::cerr << "usage: transerve-spm-encode --model=PATH [--decode] < input\n";
      return 2;
    }
  }
  if (model_path.empty()) {
    std::cerr << "usage: transerve-spm-encode --model=PATH [--decode] < input\n";
    return 2;
  }
  auto model = transerve::SentencePieceModel::LoadFromFile(model_path);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  std::ios::sync_with_stdio(false);
  for (std::string line; std::getline(std::cin, line);) {
    if (decode) {
      std::vector<std::string_view> pieces;
      for (size_t pos = 0;;) {
        const size_t end = line.find(' ', pos);
        pieces.push_back(std::string_view(line).substr(pos, end - pos));
        if (end == std::string::npos) break;
        pos = end + 1;
      }
      std::cout << (*model)->DecodePieceViews(pieces) << '\n';
      continue;
    }
    bool first = true;
    (*model)->EncodeToPieces(line, [&](std::string_view piece) {
      if (!first) std::cout << ' ';
      std::cout << piece;
      first = false;
    });
    std::cout << '\n';
  }
  return 0;
}
