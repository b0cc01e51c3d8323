// Fuzz target for the kubeconfig parser (operator/kube/config.h: YAML, contexts, clusters,
// users, base64 *-data fields). A kubeconfig comes from whoever deploys the operator, or is
// written by tools from a ServiceAccount's Secret; a malformed one must be an error value.
// Relative file names resolve against a directory that does not exist, so the parser's file
// reads fail the same way on every machine (absolute names are read as the parser would).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/check.h"
#include "operator/kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::kube;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* context : {"", "fuzz"}) {
    auto config = ParseKubeconfig(text, "/nonexistent/lockstep-fuzz", context);
    if (!config.ok()) continue;
    LS_CHECK(config->server.empty() || config->server.back() != '/');
  }
  return 0;
}
