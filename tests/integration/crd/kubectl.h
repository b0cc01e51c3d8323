#pragma once
// kubectl from PATH against the local control plane named by $KUBECONFIG, plus the namespace
// each test isolates itself in. Arguments go to execvp as a vector (no shell, no quoting).

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep::crdtest {

#define LS_REQUIRE_CLUSTER()                                                      \
  do {                                                                            \
    if (std::getenv("KUBECONFIG") == nullptr) GTEST_SKIP() << "KUBECONFIG unset"; \
  } while (0)

struct KubectlResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved as written
  bool ok() const { return exit_code == 0; }
};

// Runs `kubectl <args>`; `stdin_data` is written to its standard input.
KubectlResult Kubectl(const std::vector<std::string>& args, const std::string& stdin_data = "");

std::string SourcePath(const std::string& relative);

// Installs every CRD of crds/ (server-side) and waits until they are Established. Idempotent.
void InstallCrd();

// Creates namespace "lockstep-crd-<random>" and deletes it (without waiting) when destroyed.
class TestNamespace {
 public:
  TestNamespace();
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

}  // namespace lockstep::crdtest
