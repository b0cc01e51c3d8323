#pragma once
// A random lower-case suffix ([a-z0-9]) for the names of what a test creates (namespaces, nodes,
// pools, log files), so runs side by side and leftovers of earlier runs never collide.

#include <string>

namespace lockstep::testing {

std::string RandomSuffix(int length = 6);

}  // namespace lockstep::testing
