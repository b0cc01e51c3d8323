// Replays a fuzz target's seed corpus through it in every normal test run (the unit tier, under
// ASan + UBSan), so an input that once crashed a parser keeps being checked even where no fuzzing
// engine is built. One binary per target (cmake/LockstepFuzz.cmake names the suite and corpus).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

TEST(LOCKSTEP_FUZZ_SUITE, EveryCorpusInputIsHandled) {
  size_t inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(LOCKSTEP_FUZZ_CORPUS)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0) << entry.path();
    ++inputs;
  }
  EXPECT_GE(inputs, size_t{LOCKSTEP_FUZZ_MIN_INPUTS}) << "the seed corpus went missing";
}
