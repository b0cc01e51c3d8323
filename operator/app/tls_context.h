#pragma once
// TlsServerContext: the certificate and key an HTTPS listener serves with, as an OpenSSL
// SSL_CTX (TLS 1.2 and later). Either read from PEM files (a Secret mounted as a directory, e.g.
// cert-manager's tls.crt and tls.key) and read again when the files change, or a self-signed
// certificate made in memory at start, as controller-runtime's metrics server does without a
// certificate.
//
// Reloading: Current() stats the files at most every kReloadCheck and, when their modification
// time or size changed, loads them into a new SSL_CTX; connections already open keep the old one
// (an SSL holds a reference to its SSL_CTX). A pair that does not load (a half-written rotation)
// keeps the old context and logs; the next check tries again.
//
// Not thread-safe: one thread (the server's) calls Current().

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace lockstep::app {

class TlsServerContext {
 public:
  static constexpr std::chrono::seconds kReloadCheck{10};

  // Loads `cert_file` (the serving certificate, then any intermediates) and `key_file`; checks
  // them for changes every `reload_check` (tests pass 0) on `clock`, which outlives the context.
  static StatusOr<std::unique_ptr<TlsServerContext>> FromFiles(
      std::string cert_file, std::string key_file,
      std::chrono::milliseconds reload_check = kReloadCheck, const Clock& clock = RealClock::Get());
  // A new ECDSA P-256 key and a certificate for it signed by itself, valid from an hour ago for
  // a year, CN `common_name`, subjectAltName DNS:<each of dns_names> and IP:127.0.0.1.
  static StatusOr<std::unique_ptr<TlsServerContext>> SelfSigned(
      const std::string& common_name, const std::vector<std::string>& dns_names);

  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  // The context for a new connection (files read again first when they changed).
  SSL_CTX* Current();
  // The serving certificate (PEM) and its SHA-256 fingerprint ("AB:CD:..."), for logs and tests.
  const std::string& certificate_pem() const { return cert_pem_; }
  std::string Fingerprint() const;

 private:
  TlsServerContext() = default;
  // Builds a context from PEM text; on success replaces ctx_ and cert_pem_.
  Status Load(const std::string& cert_pem, const std::string& key_pem);
  Status LoadFiles();

  SSL_CTX* ctx_ = nullptr;
  std::string cert_pem_;
  std::string cert_file_, key_file_;  // empty: self-signed, never reloaded
  std::string files_stamp_;           // mtimes and sizes of the files last loaded
  std::chrono::milliseconds reload_check_{kReloadCheck};
  const Clock* clock_ = &RealClock::Get();
  Clock::Steady next_check_{};
};

}  // namespace lockstep::app
