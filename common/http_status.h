#pragma once
// The reason phrase of an HTTP status line ("HTTP/1.1 404 Not Found"), for the few servers that
// write status lines themselves (the operator's /metrics and probes, the test node agent's kubelet
// endpoint). One table, so the two cannot drift. Pure and constexpr.

#include <string_view>

#include "common/enum_names.h"

namespace lockstep {

inline constexpr NameTable<int, 9> kHttpReasonPhrases = {{
    {200, "OK"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {413, "Content Too Large"},
    {500, "Internal Server Error"},
    {503, "Service Unavailable"},
}};

// "Status" for a code the table does not list: clients read the code, never the phrase.
constexpr std::string_view HttpReasonPhrase(int code) {
  return NameOf(kHttpReasonPhrases, code, "Status");
}

}  // namespace lockstep
