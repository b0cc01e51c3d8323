# Test tiers are ctest labels: unit, integration, launcher, e2e (see docs/testing.md).
#
# lockstep_test(<name> LABEL <tier> SOURCES <files...> [LIBS <targets...>] [TIMEOUT <s>]
#               [CONCURRENT] [RESOURCE_LOCK <locks...>] [SERIAL_TESTS <regex>] [COST <n>])
# builds a GoogleTest binary and registers each TEST as a ctest test carrying the tier label;
# a unit binary is one ctest test running all of its TESTs (below, where it is registered).
#
# Integration and e2e tests read KUBECONFIG from the environment (hack/test.sh starts the local
# control plane) and share that one cluster, so a test of any tier but unit runs alone
# (RUN_SERIAL) unless its CMakeLists says CONCURRENT: that marks a binary whose tests were
# read and isolate themselves (a namespace, nodes and an operator of their own), so
# `ctest -j` may run them beside each other. What they still share is named:
#   RESOURCE_LOCK  ctest locks held by every test of the binary (tests holding the same lock
#                  never overlap; none is needed by today's tests, docs/testing.md).
#   SERIAL_TESTS   a regex of the binary's tests that act on the whole cluster (restart the
#                  apiserver, count every node): those still run alone.
#   COST           a start-order hint for `ctest -j` (bigger starts first); a fresh clone has no
#                  timings of its own, and a long test started last stretches the whole tier.
# A new test binary without CONCURRENT therefore runs serially until someone has checked what
# it shares: slower, never flaky for that reason.
function(lockstep_test name)
  cmake_parse_arguments(T "CONCURRENT" "LABEL;TIMEOUT;SERIAL_TESTS;COST"
                        "SOURCES;LIBS;RESOURCE_LOCK" ${ARGN})
  if(NOT T_LABEL)
    message(FATAL_ERROR "lockstep_test(${name}): LABEL is required")
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} lockstep_common GTest::gtest GTest::gmock
                        lockstep_test_main)
  lockstep_target_defaults(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(T_LABEL STREQUAL "unit")
    # The unit tier's binaries, built by target lockstep_unit_tests (CMakeLists.txt).
    set_property(GLOBAL APPEND PROPERTY LOCKSTEP_UNIT_TEST_TARGETS ${name})
    # One ctest entry per unit binary, all its tests in one process. Unit tests are pure logic
    # (a few ms each), and a process per TEST cost more than the tests: under ASan the tier's
    # 1,195 processes took 191 s of test time, p50 0.08 s each, mostly the sanitized binary
    # starting. gtest still names the failing test in the output ctest prints on failure; run one
    # test with the binary's --gtest_filter. TIMEOUT is the binary's (all its tests together).
    # No skip pattern: a binary some of whose tests skip themselves (GTEST_SKIP) ran the others,
    # and passed.
    if(NOT T_TIMEOUT)
      set(T_TIMEOUT 300)
    endif()
    add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
    set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT ${T_TIMEOUT})
    if(T_COST)
      set_tests_properties(${name} PROPERTIES COST ${T_COST})
    endif()
    return()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  # Skipped only by the line tests/testing/gtest_main.cc prints for a clean skip: gtest's own
  # "[  SKIPPED ]" also follows a failed SetUpTestSuite, and ctest would hide that failure.
  set(props LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
      SKIP_REGULAR_EXPRESSION "LOCKSTEP_TEST_SKIPPED: ")
  if(NOT T_CONCURRENT)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  if(T_COST)
    list(APPEND props COST ${T_COST})
  endif()
  gtest_discover_tests(${name} PROPERTIES ${props} DISCOVERY_TIMEOUT 60
                       EXTRA_ARGS --gtest_color=no)
  if(T_RESOURCE_LOCK OR T_SERIAL_TESTS)
    lockstep_discovered_test_properties(${name} "${T_RESOURCE_LOCK}" "${T_SERIAL_TESTS}")
  endif()
endfunction()

# lockstep_discovered_test_properties(<gtest target> <locks> <serial regex>): every discovered
# test of the target holds <locks> (a list), and those whose names match <serial regex> run alone.
# Set here, not through gtest_discover_tests(PROPERTIES), which cannot carry a list value, nor
# per name: the names exist only after the build. The file written here is included by ctest
# after the target's own discovery file and reads the names that file left in <target>_TESTS.
function(lockstep_discovered_test_properties name locks regex)
  set(file "${CMAKE_CURRENT_BINARY_DIR}/${name}_properties.cmake")
  set(body "foreach(t IN LISTS ${name}_TESTS)\n")
  if(locks)
    string(APPEND body "  set_tests_properties(\"\${t}\" PROPERTIES RESOURCE_LOCK [==[${locks}]==])\n")
  endif()
  if(regex)
    string(APPEND body "  if(t MATCHES [==[${regex}]==])\n"
                       "    set_tests_properties(\"\${t}\" PROPERTIES RUN_SERIAL TRUE)\n"
                       "  endif()\n")
  endif()
  string(APPEND body "endforeach()\n")
  file(WRITE "${file}" "${body}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${file}")
endfunction()

# Adds every child folder of the current source dir that has a CMakeLists.txt, in sorted order,
# so a new component folder needs no edit to its parent.
function(lockstep_add_child_directories)
  # The child CMakeLists.txt files, globbed with CONFIGURE_DEPENDS: one added later (bench/peers/
  # gang/) reaches a build tree configured before it, e.g. bench/peers/run's build-release/,
  # without a manual cmake run.
  file(GLOB lists CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
       ${CMAKE_CURRENT_SOURCE_DIR}/*/CMakeLists.txt)
  set(children "")
  foreach(list_file ${lists})
    get_filename_component(child ${list_file} DIRECTORY)
    list(APPEND children ${child})
  endforeach()
  list(SORT children)
  foreach(child ${children})
    add_subdirectory(${child})
  endforeach()
endfunction()
