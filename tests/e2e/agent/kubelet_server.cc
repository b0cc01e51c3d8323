#include "tests/e2e/agent/kubelet_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/http_status.h"
#include "common/log.h"

namespace lockstep::e2e {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxHead = 8 * 1024;
constexpr auto kHeadDeadline = std::chrono::seconds(10);
constexpr int kWriteTimeoutS = 30;
constexpr auto kFollowPoll = std::chrono::milliseconds(200);

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

void SetTimeout(int fd, int option, std::chrono::milliseconds t) {
  timeval tv{static_cast<time_t>(t.count() / 1000),
             static_cast<suseconds_t>(t.count() % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

int HttpCode(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      return 400;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

// Every O and the CN of a verified peer certificate.
PeerIdentity IdentityOf(X509* cert) {
  PeerIdentity id;
  X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(entry);
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<size_t>(ASN1_STRING_length(data)));
    if (nid == NID_commonName) id.user = value;
    if (nid == NID_organizationName) id.groups.push_back(value);
  }
  return id;
}

// One TLS connection: writes that give up after the socket's send timeout.
class Conn {
 public:
  Conn(SSL* ssl) : ssl_(ssl) {}
  bool Write(std::string_view data) {
    while (!data.empty()) {
      const int n =
          SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 20)));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void Respond(int code, const std::string& body) {
    Write("HTTP/1.1 " + std::to_string(code) + " " + std::string(HttpReasonPhrase(code)) +
          "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  }
  // Reads the request head (through the blank line) within kHeadDeadline and kMaxHead bytes.
  StatusOr<std::string> ReadHead() {
    std::string head;
    const auto deadline = Clock::now() + kHeadDeadline;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos) {
      if (head.size() > kMaxHead) return InvalidArgumentError("request head too large");
      if (Clock::now() >= deadline) return DeadlineExceededError("request head not sent in time");
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n > 0) {
        head.append(buf, static_cast<size_t>(n));
      } else if (SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ) {  // WANT_READ: receive timeout
        return UnavailableError("connection closed before the request head");
      }
    }
    return head;
  }

 private:
  SSL* ssl_;
};

// Copies the log from `offset` to the client: at most `limit` bytes; with `follow`, keeps
// reading what the container appends until it has exited and the rest is drained.
void StreamLog(Conn& conn, const ContainerLogRequest& req, const LogSource& source, int64_t offset,
               const std::atomic<bool>& stopping) {
  std::ifstream in(source.path, std::ios::binary);
  in.seekg(offset);
  int64_t left = req.limit_bytes.value_or(INT64_MAX);
  std::string buf(64 * 1024, '\0');
  while (left > 0 && !stopping.load()) {
    // Read whether the container still runs before draining: what it wrote before exiting is
    // then read by this pass, and the stream ends with it.
    const bool running = req.follow && source.running();
    in.clear();
    in.read(buf.data(), static_cast<std::streamsize>(std::min<int64_t>(left, buf.size())));
    const int64_t n = in.gcount();
    if (n > 0) {
      if (!conn.Write(std::string_view(buf.data(), static_cast<size_t>(n)))) return;
      left -= n;
      continue;
    }
    if (!running) return;
    std::this_thread::sleep_for(kFollowPoll);
  }
}

void ServeRequest(const KubeletServerOptions& options, const std::atomic<bool>& stopping,
                  Conn& conn, const PeerIdentity& identity) {
  StatusOr<std::string> head = conn.ReadHead();
  if (!head.ok()) return;
  const size_t line_end = head->find("\r\n");
  const std::string line = head->substr(0, line_end);
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 <= sp1) return conn.Respond(400, "malformed request line\n");
  if (line.substr(0, sp1) != "GET") return conn.Respond(405, "only GET is served\n");
  StatusOr<ContainerLogRequest> req = ParseContainerLogTarget(line.substr(sp1 + 1, sp2 - sp1 - 1));
  if (!req.ok()) return conn.Respond(HttpCode(req.status()), req.status().message() + "\n");
  StatusOr<LogSource> source = options.locate(*req);
  if (!source.ok())
    return conn.Respond(HttpCode(source.status()), source.status().message() + "\n");
  if (Status allowed = options.authorize(identity, source->node); !allowed.ok()) {
    return conn.Respond(HttpCode(allowed), allowed.message() + "\n");
  }
  if (req->previous) {
    return conn.Respond(400, "previous terminated container \"" + req->container + "\" in pod \"" +
                                 req->pod + "\" not found\n");
  }
  StatusOr<int64_t> offset =
      req->tail_lines ? TailStartOfFile(source->path, *req->tail_lines) : StatusOr<int64_t>(0);
  if (!offset.ok()) return conn.Respond(500, offset.status().message() + "\n");
  // No Content-Length: the body ends when the connection closes (a follow stream's length is
  // unknown), which is how the apiserver's proxy reads a kubelet's log.
  if (!conn.Write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")) {
    return;
  }
  StreamLog(conn, *req, *source, *offset, stopping);
}

}  // namespace

struct KubeletServer::Tls {
  SSL_CTX* ctx = nullptr;
  ~Tls() { SSL_CTX_free(ctx); }
};

KubeletServer::KubeletServer(KubeletServerOptions options) : options_(std::move(options)) {}

KubeletServer::~KubeletServer() { Stop(); }

Status KubeletServer::Start() {
  tls_ = std::make_unique<Tls>();
  tls_->ctx = SSL_CTX_new(TLS_server_method());
  if (tls_->ctx == nullptr) return InternalError("SSL_CTX_new: " + OpenSslError());
  SSL_CTX_set_min_proto_version(tls_->ctx, TLS1_2_VERSION);
  auto load = [](const std::string& pem, auto reader) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    auto* out = reader(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return out;
  };
  X509* cert = load(options_.cert_pem, PEM_read_bio_X509);
  EVP_PKEY* key = load(options_.key_pem, PEM_read_bio_PrivateKey);
  const bool loaded =
      cert != nullptr && key != nullptr && SSL_CTX_use_certificate(tls_->ctx, cert) == 1 &&
      SSL_CTX_use_PrivateKey(tls_->ctx, key) == 1 && SSL_CTX_check_private_key(tls_->ctx) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  if (!loaded) return InvalidArgumentError("serving certificate or key: " + OpenSslError());
  // Every CA certificate of the bundle verifies clients; none is sent to them.
  X509_STORE* store = SSL_CTX_get_cert_store(tls_->ctx);
  BIO* bio = BIO_new_mem_buf(options_.client_ca_pem.data(),
                             static_cast<int>(options_.client_ca_pem.size()));
  int cas = 0;
  while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, ca) == 1) ++cas;
    X509_free(ca);
  }
  BIO_free(bio);
  ERR_clear_error();
  if (cas == 0) return InvalidArgumentError("no client CA certificate to verify the apiserver");
  SSL_CTX_set_verify(tls_->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);

  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return InternalError("socket: " + std::string(strerror(errno)));
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(options_.port));
  if (inet_pton(AF_INET, options_.address.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError("not an IPv4 address: " + options_.address);
  }
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    return UnavailableError("cannot listen on " + options_.address + ":" +
                            std::to_string(options_.port) + ": " + strerror(errno));
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  log::Info("kubelet log endpoint listening",
            {{"address", options_.address + ":" + std::to_string(port_)}});
  return Status::Ok();
}

void KubeletServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
  std::map<uint64_t, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);  // unblocks their reads and writes
    threads.swap(threads_);
  }
  for (auto& [serial, t] : threads) t.join();
}

void KubeletServer::JoinFinished() {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t serial : finished_) {
      auto it = threads_.find(serial);
      if (it == threads_.end()) continue;
      done.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }
  for (std::thread& t : done) t.join();
}

void KubeletServer::AcceptLoop() {
  while (!Stopping()) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;  // shut down by Stop()
    }
    JoinFinished();
    std::lock_guard<std::mutex> lock(mu_);
    if (Stopping() || static_cast<int>(open_fds_.size()) >= kMaxConnections) {
      close(fd);  // over the bound: the apiserver retries or reports the error
      continue;
    }
    open_fds_.insert(fd);
    const uint64_t serial = next_serial_++;
    threads_.emplace(serial, std::thread([this, fd, serial] {
                       Serve(fd);
                       std::lock_guard<std::mutex> done(mu_);
                       open_fds_.erase(fd);
                       close(fd);
                       finished_.push_back(serial);
                     }));
  }
}

void KubeletServer::Serve(int fd) {
  SetTimeout(fd, SO_RCVTIMEO, std::chrono::milliseconds(1000));
  SetTimeout(fd, SO_SNDTIMEO, std::chrono::seconds(kWriteTimeoutS));
  SSL* ssl = SSL_new(tls_->ctx);
  SSL_set_fd(ssl, fd);
  // The handshake verifies the client's certificate against the cluster CA (SSL_VERIFY_PEER).
  const auto handshake_deadline = Clock::now() + kHeadDeadline;
  int accepted = 0;
  while ((accepted = SSL_accept(ssl)) != 1 && Clock::now() < handshake_deadline && !Stopping()) {
    const int err = SSL_get_error(ssl, accepted);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE &&
        !(err == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK))) {
      break;
    }
  }
  X509* peer = accepted == 1 ? SSL_get1_peer_certificate(ssl) : nullptr;
  if (peer == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    if (accepted != 1)
      log::Warning("kubelet endpoint: TLS handshake failed", {{"error", OpenSslError()}});
    X509_free(peer);
    SSL_free(ssl);
    return;
  }
  const PeerIdentity identity = IdentityOf(peer);
  X509_free(peer);
  Conn conn(ssl);
  ServeRequest(options_, stopping_, conn, identity);
  SSL_shutdown(ssl);
  SSL_free(ssl);
}

}  // namespace lockstep::e2e
