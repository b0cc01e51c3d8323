#pragma once
// Base64 as the API server and kubeconfig files carry bytes: Secret `data` values and the
// `*-data` fields (certificates, keys). Standard alphabet; padding and line breaks are skipped.

#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::kube {

StatusOr<std::string> Base64Decode(const std::string& in);

// Standard alphabet with padding, no line breaks (a CertificateSigningRequest's spec.request).
std::string Base64Encode(std::string_view in);

}  // namespace lockstep::kube
