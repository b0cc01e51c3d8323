#include "common/clock.h"

namespace lockstep {

const RealClock& RealClock::Get() {
  static const RealClock clock;
  return clock;
}

}  // namespace lockstep
