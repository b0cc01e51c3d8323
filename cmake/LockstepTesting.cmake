# Test tiers are ctest labels: unit, integration, launcher, e2e (see docs/testing.md).
#
# lockstep_test(<name> LABEL <tier> SOURCES <files...> [LIBS <targets...>] [TIMEOUT <s>])
# builds a GoogleTest binary and registers each TEST as a ctest test carrying the tier label.
# Integration and e2e tests read KUBECONFIG from the environment (hack/test.sh starts the local
# control plane); they run serially because they share that cluster.
function(lockstep_test name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    message(FATAL_ERROR "lockstep_test(${name}): LABEL is required")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} lockstep_common GTest::gtest GTest::gmock GTest::gtest_main)
  lockstep_target_defaults(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  set(props LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT})
  if(NOT T_LABEL STREQUAL "unit")
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${name} PROPERTIES ${props} DISCOVERY_TIMEOUT 60
                       EXTRA_ARGS --gtest_color=no)
endfunction()

# Adds every child folder of the current source dir that has a CMakeLists.txt, in sorted order,
# so a new component folder needs no edit to its parent.
function(lockstep_add_child_directories)
  file(GLOB children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
       ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT children)
  foreach(child ${children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${child} AND
       EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
