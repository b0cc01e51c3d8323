#pragma once
// Writes the termination message (protocol/termination.h: the JSON the operator reads back from
// the trainer container's terminated state) where Kubernetes looks for it.

#include <string>

#include "common/status.h"
#include "protocol/termination.h"

namespace lockstep::launcher::supervisor {

// Writes the encoded message to `path`. Failure is reported, never fatal: outside Kubernetes the
// default path usually does not exist.
Status WriteTerminationLog(const std::string& path, const protocol::TerminationMessage& message);

}  // namespace lockstep::launcher::supervisor
