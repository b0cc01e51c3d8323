# Fuzz targets (tests/fuzz/<name>/, docs/reliability.md). Every target is built two ways:
#   - always, as a GoogleTest that replays the checked-in corpus through the target (label unit;
#     hack/test.sh runs it in build-asan/ under ASan + UBSan), so an input that once crashed a
#     parser keeps being checked without a fuzzing engine;
#   - with -DLOCKSTEP_FUZZ=ON (clang only; hack/fuzz.sh makes build-fuzz/), as a libFuzzer binary
#     build-fuzz/tests/fuzz_<name>. The whole tree is then compiled with -fsanitize=fuzzer-no-link
#     as well as ASan + UBSan, so the coverage that guides libFuzzer includes the parsers in the
#     project's libraries, not only the target's own file.
option(LOCKSTEP_FUZZ "Build libFuzzer binaries of tests/fuzz (clang; see hack/fuzz.sh)" OFF)

if(LOCKSTEP_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "LOCKSTEP_FUZZ needs clang (CC=clang CXX=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# lockstep_fuzz_target(<name> SOURCE <file> LIBS <targets...> SUITE <GTestSuiteName>
#                      [MIN_INPUTS <n>])
# <file> defines LLVMFuzzerTestOneInput; its seed corpus is ./corpus beside it. The replay test
# is <name>_fuzz_replay_test, its one test <SUITE>.EveryCorpusInputIsHandled; it fails when the
# corpus has fewer than MIN_INPUTS (default 10) files, so a corpus that went missing is noticed.
function(lockstep_fuzz_target name)
  cmake_parse_arguments(F "" "SOURCE;SUITE;MIN_INPUTS" "LIBS" ${ARGN})
  if(NOT F_SOURCE OR NOT F_SUITE)
    message(FATAL_ERROR "lockstep_fuzz_target(${name}): SOURCE and SUITE are required")
  endif()
  if(NOT F_MIN_INPUTS)
    set(F_MIN_INPUTS 10)
  endif()
  add_library(fuzz_${name}_target STATIC ${F_SOURCE})
  target_link_libraries(fuzz_${name}_target PUBLIC ${F_LIBS})
  lockstep_target_defaults(fuzz_${name}_target)

  lockstep_test(${name}_fuzz_replay_test LABEL unit
    SOURCES ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_test.cc LIBS fuzz_${name}_target)
  target_compile_definitions(${name}_fuzz_replay_test PRIVATE
    LOCKSTEP_FUZZ_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/corpus"
    LOCKSTEP_FUZZ_SUITE=${F_SUITE} LOCKSTEP_FUZZ_MIN_INPUTS=${F_MIN_INPUTS})

  if(LOCKSTEP_FUZZ)
    add_executable(fuzz_${name} ${F_SOURCE})
    target_link_libraries(fuzz_${name} PRIVATE ${F_LIBS})
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    lockstep_target_defaults(fuzz_${name})
    set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  endif()
endfunction()
