// The death tests that count glibc's arenas are in tests/integration/malloc: this tier runs
// under ASan, whose allocator replaces glibc's.
#include "common/malloc_arenas.h"

#include <gtest/gtest.h>
#include <cstdlib>
#include <string>

namespace lockstep {
namespace {

TEST(MallocArenasTest, TheEnvironmentWins) {
  const char* before = std::getenv("MALLOC_ARENA_MAX");
  std::string saved = before != nullptr ? before : "";
  setenv("MALLOC_ARENA_MAX", "3", 1);
  EXPECT_EQ(CapMallocArenas(2), "MALLOC_ARENA_MAX=3 (environment)");
  if (before != nullptr) {
    setenv("MALLOC_ARENA_MAX", saved.c_str(), 1);
  } else {
    unsetenv("MALLOC_ARENA_MAX");
  }
}

TEST(MallocArenasTest, CountsTheArenasMade) { EXPECT_GE(MallocArenaCount(), 1); }

}  // namespace
}  // namespace lockstep
