# lockstep_target_defaults(<target>): warnings (as errors for our code) and the sanitizer option.
# Third-party headers are included as SYSTEM so their warnings never fail our build.
function(lockstep_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
                                           -Wimplicit-fallthrough)
  # Not -Wnull-dereference: with -O2, GCC 12 reports it inside nlohmann-json's iterators after
  # inlining, where the system-header exemption no longer applies (false positives).
  # GCC 12 raises a false -Wrestrict inside libstdc++'s string code at -O3 (fixed in GCC 13).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  # ASan's instrumentation makes GCC 12 report -Wmaybe-uninitialized inside libstdc++'s <regex>
  # and <functional> (false positives); the warning stays on in the normal build.
  if(LOCKSTEP_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
  if(LOCKSTEP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
endfunction()

if(LOCKSTEP_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
