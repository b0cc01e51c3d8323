#pragma once
// The serving certificate of the agent's kubelet endpoint, obtained the way a kubelet with
// serverTLSBootstrap does: a fresh P-256 key, a CertificateSigningRequest for the
// kubernetes.io/kubelet-serving signer (O=system:nodes, CN=system:node:<node>, the node's IP as
// its subject alternative name), which kube-controller-manager's csrsigning controller signs
// with the cluster CA (--cluster-signing-cert-file). A kubelet waits for an approver; the agent
// approves its own request (its credentials may), and deletes the request once issued.

#include <chrono>
#include <string>

#include "common/status.h"
#include "operator/kube/rest_client.h"

namespace lockstep::e2e {

struct ServingCertificate {
  std::string cert_pem;  // the issued certificate
  std::string key_pem;   // its private key (never written to disk or logs)
};

// A PEM key and a PEM "CERTIFICATE REQUEST" for `node` with `ip` as its IP SAN.
struct KeyAndRequest {
  std::string key_pem;
  std::string csr_pem;
};
StatusOr<KeyAndRequest> MakeKubeletServingRequest(const std::string& node, const std::string& ip);

// Requests, approves and waits (up to `timeout`) for the certificate. DEADLINE_EXCEEDED names
// what was missing (e.g. a controller manager without signing flags never issues it).
StatusOr<ServingCertificate> RequestServingCertificate(kube::RestClient& client,
                                                       const std::string& node,
                                                       const std::string& ip,
                                                       std::chrono::seconds timeout);

}  // namespace lockstep::e2e
