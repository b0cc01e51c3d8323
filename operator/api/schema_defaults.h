#pragma once
// The defaults the CRD schema declares (`default:` in crds/lockstep.dev_trainingjobs.yaml). The
// C++ types use them as member initializers so objects stored before a default existed decode to
// today's value; tests/unit/api/defaults_test.cc checks this file against the CRD.

#include <cstdint>
#include <string_view>

#include "operator/api/enums.h"

namespace lockstep::api {

inline constexpr int32_t kDefaultReplicas = 1;
inline constexpr int32_t kDefaultMaxRestarts = 3;
inline constexpr int32_t kDefaultMaxDisruptions = 10;
inline constexpr RestartMode kDefaultRestartMode = RestartMode::kInPlace;
inline constexpr int32_t kDefaultInPlaceTimeoutSeconds = 60;
inline constexpr int32_t kDefaultBackoffInitialSeconds = 10;
inline constexpr int32_t kDefaultBackoffMaxSeconds = 300;
inline constexpr int32_t kDefaultBackoffResetAfterSeconds = 600;
inline constexpr int32_t kDefaultElasticGrowCooldownSeconds = 60;
inline constexpr bool kDefaultSuspend = false;
inline constexpr CleanPodPolicy kDefaultCleanPodPolicy = CleanPodPolicy::kRunning;
// Ten minutes: two full periods of the kubelet's image pull back-off (capped at 300 s), so a
// registry outage or a Secret created a little after the job is retried before the attempt ends.
inline constexpr int32_t kDefaultStartupTimeoutSeconds = 600;
inline constexpr SuccessOperator kDefaultSuccessOperator = SuccessOperator::kAll;

}  // namespace lockstep::api
