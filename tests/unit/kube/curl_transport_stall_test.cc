// CurlTransport's bound on a stalled read (CurlTransportOptions::read_stall_timeout): a GET
// whose body stops arriving ends with DEADLINE_EXCEEDED long before its total timeout, while a
// body that arrives slowly but steadily is not cut. The server is an HTTPS/1.1 socket on loopback
// with a self-signed certificate made here, which sends headers and part of a body, then
// trickles or stops: the real apiserver cannot be made to stall a response on purpose.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "operator/kube/curl_transport.h"

namespace lockstep::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

// A server TLS context with a self-signed certificate for IP 127.0.0.1, and that certificate
// in PEM (the client's CA). The key and certificate go to the context as they are made.
struct SelfSigned {
  SSL_CTX* ctx = nullptr;
  std::string cert_pem;
};

SelfSigned MakeSelfSigned() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("stall-test"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (const char* ext : {"subjectAltName=IP:127.0.0.1", "basicConstraints=critical,CA:TRUE"}) {
    const std::string text(ext);
    const size_t eq = text.find('=');
    X509_EXTENSION* e =
        X509V3_EXT_conf(nullptr, &ctx, text.substr(0, eq).c_str(), text.substr(eq + 1).c_str());
    X509_add_ext(cert, e, -1);
    X509_EXTENSION_free(e);
  }
  X509_sign(cert, key, EVP_sha256());
  SelfSigned out;
  out.ctx = SSL_CTX_new(TLS_server_method());
  if (SSL_CTX_use_certificate(out.ctx, cert) != 1 || SSL_CTX_use_PrivateKey(out.ctx, key) != 1) {
    ADD_FAILURE() << "cannot load the test certificate";
  }
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  out.cert_pem.assign(data, static_cast<size_t>(n));
  BIO_free(bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

// Answers one connection: a 200 with Content-Length 100, then `chunks` bytes one per `gap`, then
// nothing until the test ends (the rest of the body never comes).
class StallingServer {
 public:
  StallingServer(int chunks, milliseconds gap) : chunks_(chunks), gap_(gap) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 1) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~StallingServer() {
    done_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
    SSL_CTX_free(tls_.ctx);
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  const std::string& ca_pem() const { return tls_.cert_pem; }

 private:
  void Serve() {
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    SSL* ssl = SSL_new(tls_.ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      char buf[4096];
      (void)SSL_read(ssl, buf, sizeof(buf));  // the request (one small GET)
      const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
      SSL_write(ssl, head.data(), static_cast<int>(head.size()));
      for (int i = 0; i < chunks_ && !done_; ++i) {
        SSL_write(ssl, "x", 1);
        std::this_thread::sleep_for(gap_);
      }
      while (!done_) std::this_thread::sleep_for(milliseconds(20));
    }
    SSL_free(ssl);
    close(fd);
  }

  SelfSigned tls_ = MakeSelfSigned();
  int chunks_;
  milliseconds gap_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// One GET of `path` from `server` through a CurlTransport with a 2 s stall bound.
StatusOr<Response> GetFrom(const StallingServer& server, const std::string& path, seconds timeout) {
  ClusterConfig config;
  config.server = server.url();
  config.ca_pem = server.ca_pem();
  auto transport = NewCurlTransport(
      config, CurlTransportOptions{.http2 = false, .read_stall_timeout = seconds(2)});
  if (!transport.ok()) return transport.status();
  Request request;
  request.path = path;
  request.timeout = timeout;
  return (*transport)->Do(request);
}

TEST(CurlTransportStallTest, AReadThatStopsArrivingEndsAtTheStallBoundNotTheTimeout) {
  StallingServer server(/*chunks=*/10, milliseconds(0));
  const auto start = steady_clock::now();
  StatusOr<Response> r = GetFrom(server, "/api/v1/nodes?limit=500", seconds(60));
  const auto took = steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(took, milliseconds(1500));
  EXPECT_LT(took, seconds(15)) << "waited out the total timeout instead of the stall bound";
}

TEST(CurlTransportStallTest, ASlowSteadyResponseIsNotCutByTheStallBound) {
  // 100 bytes one per 40 ms: 4 s in all, twice the stall bound, never a second without a byte.
  StallingServer server(/*chunks=*/100, milliseconds(40));
  StatusOr<Response> r = GetFrom(server, "/api/v1/pods", seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::string(100, 'x'));
}

}  // namespace
}  // namespace lockstep::kube
