#pragma once
// glibc's malloc gives a thread its own arena the first time it allocates, up to 8 per core, and
// memory freed into an arena stays mapped there for the next allocation made in it. A process
// that starts short-lived threads for parallel requests (the operator's batched creates and
// deletes) spreads its freed request and object buffers over all of them, so its resident size
// grows with the arenas, not with what it holds: the operator's peak RSS on the 500-gang burst
// was 107 MB with glibc's default and 73 MB with two arenas (bench/RESULTS.md, "Cost").
//
// CapMallocArenas(n) sets that limit to n unless the environment already names one
// (MALLOC_ARENA_MAX, which glibc reads itself and which then wins). Call it first thing in
// main(), before any thread starts: arenas already made stay.

#include <string>

namespace lockstep {

// Returns what was done, for the start-up log: "MALLOC_ARENA_MAX=<n> (environment)",
// "<n> (default)", or the error when mallopt refused.
std::string CapMallocArenas(int max_arenas);

// The number of arenas glibc has made so far (malloc_info's <heap> entries); -1 if unknown.
int MallocArenaCount();

}  // namespace lockstep
