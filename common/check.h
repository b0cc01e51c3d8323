#pragma once
// LS_CHECK: crash on a broken invariant (Envoy's philosophy: the operator rebuilds from the API
// server, so a restart is cheap and safer than continuing with corrupt state). Never use it for
// anything the environment can do (bad input, network errors, API errors): return a Status.

#include <cstdio>
#include <cstdlib>

#define LS_CHECK(cond)                                                                    \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
