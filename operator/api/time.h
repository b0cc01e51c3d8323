#pragma once
// Times in the TrainingJob API (status.startTime, lastRestart.time, ...) are metav1.Time: RFC
// 3339, UTC, whole seconds. One parser and formatter serves the API and the kube client
// (common/rfc3339.h).

#include "common/rfc3339.h"

namespace lockstep::api {

using ::lockstep::FormatTime;
using ::lockstep::ParseTime;

}  // namespace lockstep::api
