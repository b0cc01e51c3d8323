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

// A self-signed certificate for IP 127.0.0.1 and its key, PEM.
struct SelfSigned {
  std::string cert_pem, key_pem;
};

std::string ToPem(int (*write)(BIO*, void*), void* object) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio, object);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

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
  out.cert_pem =
      ToPem([](BIO* b, void* c) { return PEM_write_bio_X509(b, static_cast<X509*>(c)); }, cert);
  out.key_pem = ToPem(
      [](BIO* b, void* k) {
        return PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0, nullptr,
                                        nullptr);
      },
      key);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

// Answers one connection: a 200 with Content-Length 100, then `chunks` bytes one per `gap`, then
// nothing until the test ends (the rest of the body never comes).
class StallingServer {
 public:
  StallingServer(int chunks, milliseconds gap) : chunks_(chunks), gap_(gap) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert_bio = BIO_new_mem_buf(pem_.cert_pem.data(), static_cast<int>(pem_.cert_pem.size()));
    BIO* key_bio = BIO_new_mem_buf(pem_.key_pem.data(), static_cast<int>(pem_.key_pem.size()));
    X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    const bool loaded =
        SSL_CTX_use_certificate(ctx_, cert) == 1 && SSL_CTX_use_PrivateKey(ctx_, key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cert_bio);
    BIO_free(key_bio);
    if (!loaded) {
      ADD_FAILURE() << "cannot load the test certificate";
      return;
    }
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
    SSL_CTX_free(ctx_);
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  const std::string& ca_pem() const { return pem_.cert_pem; }

 private:
  void Serve() {
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    SSL* ssl = SSL_new(ctx_);
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

  SelfSigned pem_ = MakeSelfSigned();
  SSL_CTX* ctx_ = nullptr;
  int chunks_;
  milliseconds gap_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

std::unique_ptr<Transport> TransportTo(const StallingServer& server) {
  ClusterConfig config;
  config.server = server.url();
  config.ca_pem = server.ca_pem();
  auto t = NewCurlTransport(config,
                            CurlTransportOptions{.http2 = false, .read_stall_timeout = seconds(2)});
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(t).value();
}

TEST(CurlTransportStallTest, AReadThatStopsArrivingEndsAtTheStallBoundNotTheTimeout) {
  StallingServer server(/*chunks=*/10, milliseconds(0));
  auto transport = TransportTo(server);
  Request request;
  request.path = "/api/v1/nodes?limit=500";
  request.timeout = seconds(60);
  const auto start = steady_clock::now();
  StatusOr<Response> r = transport->Do(request);
  const auto took = steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(took, milliseconds(1500));
  EXPECT_LT(took, seconds(15)) << "waited out the total timeout instead of the stall bound";
}

TEST(CurlTransportStallTest, ASlowSteadyResponseIsNotCutByTheStallBound) {
  // 100 bytes one per 40 ms: 4 s in all, twice the stall bound, never a second without a byte.
  StallingServer server(/*chunks=*/100, milliseconds(40));
  auto transport = TransportTo(server);
  Request request;
  request.path = "/api/v1/pods";
  request.timeout = seconds(30);
  StatusOr<Response> r = transport->Do(request);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::string(100, 'x'));
}

}  // namespace
}  // namespace lockstep::kube
