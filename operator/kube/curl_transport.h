#pragma once
// Transport on libcurl. Ordinary requests run on one curl multi handle driven by a dedicated
// thread: connections are reused, HTTP/2 is negotiated by ALPN where the server offers it and
// many requests are multiplexed over one connection. Streams (watches) each use their own easy
// handle on the caller's thread so a slow event handler never stalls other traffic; they share
// TLS sessions and DNS with the multi handle through a curl share handle.
//
// TLS peer and host verification are always on. Inline PEM material reaches curl as memory
// blobs (CURLOPT_CAINFO_BLOB, _SSLCERT_BLOB, _SSLKEY_BLOB), never as temporary files.

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "operator/kube/config.h"
#include "operator/kube/transport.h"

namespace lockstep::kube {

struct CurlTransportOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  bool http2 = true;  // CURL_HTTP_VERSION_2TLS: HTTP/2 over TLS when offered, else HTTP/1.1
  // Do() of a GET: a response of which no byte arrives for this long is abandoned with
  // DEADLINE_EXCEEDED, well before Request::timeout (0: only the timeout bounds it). Reads are
  // retried safely, and a stalled one is not worth waiting out: a CI run's operator waited a
  // LIST's whole minute after its first 80 KB while the other requests of its connection went
  // on. An apiserver that answers at all sends a page of a list within a second or two. curl
  // judges the rate over its last 5 s, so a stall after a burst ends up to 5 s later.
  std::chrono::seconds read_stall_timeout{20};
};

// Creates the transport; fails only if curl itself cannot be initialised.
StatusOr<std::unique_ptr<Transport>> NewCurlTransport(const ClusterConfig& config,
                                                      const CurlTransportOptions& options = {});

}  // namespace lockstep::kube
