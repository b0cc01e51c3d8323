// Replays the seed corpus through the fuzz target in every normal test run, so a corpus input
// that once crashed the decoder keeps being checked even where no fuzzing engine is built.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

TEST(RendezvousFrameFuzzReplay, EveryCorpusInputIsHandled) {
  size_t inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(LOCKSTEP_FUZZ_CORPUS)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0) << entry.path();
    ++inputs;
  }
  EXPECT_GE(inputs, 10u) << "the seed corpus went missing";
}
