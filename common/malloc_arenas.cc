#include "common/malloc_arenas.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lockstep {

std::string CapMallocArenas(int max_arenas) {
  if (const char* env = std::getenv("MALLOC_ARENA_MAX"); env != nullptr && *env != '\0') {
    return std::string("MALLOC_ARENA_MAX=") + env + " (environment)";
  }
  if (mallopt(M_ARENA_MAX, max_arenas) != 1) {
    return "mallopt(M_ARENA_MAX, " + std::to_string(max_arenas) + ") refused; glibc's default";
  }
  return std::to_string(max_arenas) + " (default)";
}

int MallocArenaCount() {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (out == nullptr) return -1;
  int rc = malloc_info(0, out);
  std::fclose(out);
  int heaps = 0;
  if (rc == 0) {
    for (const char* p = text; (p = std::strstr(p, "<heap nr=")) != nullptr; ++p) ++heaps;
  }
  std::free(text);
  return rc == 0 ? heaps : -1;
}

}  // namespace lockstep
