#pragma once
// Transport on libcurl. Ordinary requests run on one curl multi handle driven by a dedicated
// thread: connections are reused, HTTP/2 is negotiated by ALPN where the server offers it and
// many requests are multiplexed over one connection. Streams (watches) each use their own easy
// handle on the caller's thread so a slow event handler never stalls other traffic; they share
// TLS sessions and DNS with the multi handle through a curl share handle.
//
// TLS peer and host verification are always on. Inline PEM material reaches curl as memory
// blobs (CURLOPT_CAINFO_BLOB, _SSLCERT_BLOB, _SSLKEY_BLOB), never as temporary files.

#include <memory>
#include <string>

#include "common/status.h"
#include "operator/kube/config.h"
#include "operator/kube/transport.h"

namespace lockstep::kube {

struct CurlTransportOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  bool http2 = true;  // CURL_HTTP_VERSION_2TLS: HTTP/2 over TLS when offered, else HTTP/1.1
};

// Creates the transport; fails only if curl itself cannot be initialised.
StatusOr<std::unique_ptr<Transport>> NewCurlTransport(const ClusterConfig& config,
                                                      const CurlTransportOptions& options = {});

}  // namespace lockstep::kube
