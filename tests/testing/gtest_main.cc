// The main() of every lockstep_test binary (cmake/LockstepTesting.cmake). GoogleTest prints
// "[  SKIPPED ]" both for a test that skipped itself and for the tests of a suite whose
// SetUpTestSuite failed, and ctest's default skip pattern would count the second as a skip too,
// hiding a failure. This main says "skipped" only when the run skipped something and did not
// fail: ctest's skip pattern matches this line alone.
#include <cstdio>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  if (rc == 0 && !run.Failed() && run.skipped_test_count() > 0) {
    std::printf("LOCKSTEP_TEST_SKIPPED: %d test(s) skipped, none failed\n",
                run.skipped_test_count());
  }
  return rc;
}
