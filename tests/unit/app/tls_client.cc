#include "tests/unit/app/tls_client.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/testing/free_port.h"

namespace lockstep::app::testing {
namespace {

void ParseReply(TlsReply* r) {
  if (r->response.size() < 12 || r->response.rfind("HTTP/1.", 0) != 0) return;
  r->status = std::stoi(r->response.substr(9, 3));
  const size_t end = r->response.find("\r\n\r\n");
  if (end != std::string::npos) r->body = r->response.substr(end + 4);
}

}  // namespace

TlsReply TlsExchange(int port, const std::string& request, const std::string& trust_pem,
                     const std::string& host, std::chrono::milliseconds timeout) {
  TlsReply out;
  const int fd = ::lockstep::testing::ConnectTcp(port);
  if (fd < 0) return out;
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!trust_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(trust_pem.data(), static_cast<int>(trust_pem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
    X509_free(ca);
    BIO_free(bio);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  // SSL_set_tlsext_host_name without its C cast.
  SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(host.c_str()));
  if (!trust_pem.empty()) SSL_set1_host(ssl, host.c_str());
  if (SSL_connect(ssl) == 1) {
    out.handshake = true;
    if (X509* peer = SSL_get1_peer_certificate(ssl)) {
      BIO* bio = BIO_new(BIO_s_mem());
      PEM_write_bio_X509(bio, peer);
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio, &data);
      out.peer_pem.assign(data, static_cast<size_t>(n));
      BIO_free(bio);
      X509_free(peer);
    }
    if (SSL_write(ssl, request.data(), static_cast<int>(request.size())) > 0) {
      char buf[4096];
      int n = 0;
      while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) out.response.append(buf, n);
    }
  }
  ERR_clear_error();
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
  ParseReply(&out);
  return out;
}

TlsReply TlsGet(int port, const std::string& path, const std::string& token,
                const std::string& trust_pem) {
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  return TlsExchange(port, req + "\r\n", trust_pem);
}

}  // namespace lockstep::app::testing
