#pragma once
// Base64 as the API server and kubeconfig files carry bytes: Secret `data` values and the
// `*-data` fields (certificates, keys). Standard alphabet; padding and line breaks are skipped.

#include <string>

#include "common/status.h"

namespace lockstep::kube {

StatusOr<std::string> Base64Decode(const std::string& in);

}  // namespace lockstep::kube
