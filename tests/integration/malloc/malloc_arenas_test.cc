#include "common/malloc_arenas.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <barrier>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_SANITIZED_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCKSTEP_SANITIZED_MALLOC 1
#endif
#endif

namespace lockstep {
namespace {

// Starts `n` threads that each allocate while all are alive (a thread that has exited hands its
// arena to the next one, so only concurrent threads show how many arenas glibc makes), then
// exits the process with the arena count as its status.
[[noreturn]] void AllocateFromThreadsAndExitWithArenaCount(int n) {
  std::barrier all_allocated(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&all_allocated] {
      void* volatile p = std::malloc(4096);
      all_allocated.arrive_and_wait();
      std::free(p);
    });
  }
  for (auto& t : threads) t.join();
  std::_Exit(MallocArenaCount());
}

class MallocArenasDeathTest : public testing::Test {
 protected:
  void SetUp() override {
    // A fresh process per case: a forked child would inherit the arenas this one already made.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
#ifdef LOCKSTEP_SANITIZED_MALLOC
    GTEST_SKIP() << "ASan's allocator replaces glibc's: no arenas to count";
#endif
    if (std::getenv("MALLOC_ARENA_MAX") != nullptr) GTEST_SKIP() << "MALLOC_ARENA_MAX is set";
  }
};

auto ExitedWithAtMost(int most) {
  return [most](int status) { return WIFEXITED(status) && WEXITSTATUS(status) <= most; };
}
auto ExitedWithAtLeast(int least) {
  return [least](int status) { return WIFEXITED(status) && WEXITSTATUS(status) >= least; };
}

TEST_F(MallocArenasDeathTest, CappedSixThreadsShareTwoArenas) {
  EXPECT_EXIT(
      {
        CapMallocArenas(2);
        AllocateFromThreadsAndExitWithArenaCount(6);
      },
      ExitedWithAtMost(2), "");
}

// The control: without the cap the same threads make an arena each (glibc allows 8 per core),
// so the case above can fail.
TEST_F(MallocArenasDeathTest, UncappedSixThreadsMakeMoreArenas) {
  EXPECT_EXIT(AllocateFromThreadsAndExitWithArenaCount(6), ExitedWithAtLeast(4), "");
}

}  // namespace
}  // namespace lockstep
