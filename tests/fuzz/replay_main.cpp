// Replays a fuzz target's corpus without libFuzzer (any compiler, no sanitizer runtime needed): runs
// LLVMFuzzerTestOneInput once over every file in the directories and files given, so CI checks that every input
// the fuzzer ever kept (and every crash once fixed) still runs cleanly. A property failure aborts.
//   fuzz_replay_<name> DIR_OR_FILE...
// Fails when an argument does not exist or when no input at all was found, so an empty or missing corpus cannot
// pass silently.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " DIR_OR_FILE...\n";
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const fs::directory_entry& e : fs::recursive_directory_iterator(arg)) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::cerr << argv[0] << ": " << arg.string() << ": no such file or directory\n";
      return 1;
    }
  }
  if (inputs.empty()) {
    std::cerr << argv[0] << ": no inputs found (an empty corpus tests nothing)\n";
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());  // a stable order, so a failure is reproducible from the log
  size_t bytes = 0;
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      std::cerr << argv[0] << ": cannot read " << p.string() << "\n";
      return 1;
    }
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cerr << "running " << p.string() << " (" << data.size() << " bytes)\n";
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    bytes += data.size();
  }
  std::cout << "ran " << inputs.size() << " inputs (" << bytes << " bytes) without a failure\n";
  return 0;
}
