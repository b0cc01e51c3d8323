#include "operator/kube/curl_transport.h"

#include <curl/curl.h>

#include <array>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "operator/kube/line_splitter.h"

namespace lockstep::kube {
namespace {

// CURLOPT_UPLOAD_BUFFERSIZE: curl's minimum (see Setup).
constexpr long kUploadBufferBytes = 16 * 1024;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Connect-phase failures mean the request never left this process: safe to retry anything.
Status CurlError(CURLcode code, const char* errbuf) {
  std::string msg = std::string(curl_easy_strerror(code));
  if (errbuf != nullptr && errbuf[0] != '\0') msg += ": " + std::string(errbuf);
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return UnavailableError("connect: " + msg);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return UnavailableError("tls: " + msg);
    case CURLE_OPERATION_TIMEDOUT:
      return DeadlineExceededError(msg);
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR:
      return CancelledError(msg);
    default:
      return InternalError(msg);
  }
}

// Per-transfer state shared between the submitting thread and curl's callbacks.
struct Transfer {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Request request;
  Response response;
  std::array<char, CURL_ERROR_SIZE> errbuf{};
  std::string ca_pem;  // a re-read CA bundle, kept for the transfer's lifetime (CURL_BLOB_NOCOPY)
  const std::atomic<bool>* cancel = nullptr;  // the stream's, or the request's
  // Streaming only.
  const LineHandler* on_line = nullptr;
  LineSplitter lines;
  bool stopped_by_handler = false;
  bool fenced = false;  // the request's fence refused it before it was sent
  bool line_too_long = false;
  std::promise<StatusOr<Response>> done;

  ~Transfer() {
    if (headers != nullptr) curl_slist_free_all(headers);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->response.retry_after.clear();  // a new response starts
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    std::string lower(line.substr(0, kRetryAfter.size()));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kRetryAfter) {
      std::string value(line.substr(kRetryAfter.size()));
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
        value.pop_back();
      }
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      t->response.retry_after = value;
    }
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (t->on_line == nullptr) {
    t->response.body.append(data, len);
    return len;
  }
  long code = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code >= 300) {  // an error body is returned whole, not streamed
    t->response.body.append(data, len);
    return len;
  }
  if (t->cancel != nullptr && t->cancel->load()) return 0;
  switch (t->lines.Append(std::string_view(data, len), *t->on_line)) {
    case LineSplitter::Result::kMore:
      return len;
    case LineSplitter::Result::kStopped:
      t->stopped_by_handler = true;
      return 0;
    case LineSplitter::Result::kTooLong:
      t->line_too_long = true;
      return 0;
  }
  return 0;
}

#if LIBCURL_VERSION_NUM >= 0x075000  // CURLOPT_PREREQFUNCTION: curl 7.80
// Called once the connection is ready, just before the request is written to it: the last
// moment a fenced write can still be dropped unsent.
int OnPrereq(void* user, char*, char*, int, int) {
  auto* t = static_cast<Transfer*>(user);
  if (t->request.fence && !t->request.fence()) {
    t->fenced = true;
    return CURL_PREREQFUNC_ABORT;
  }
  return CURL_PREREQFUNC_OK;
}
#endif

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return (t->cancel != nullptr && t->cancel->load()) ? 1 : 0;
}

class CurlTransport final : public Transport {
 public:
  CurlTransport(ClusterConfig config, CurlTransportOptions options)
      : config_(std::move(config)), options_(options) {
    host_ = config_.server;
    if (auto p = host_.find("://"); p != std::string::npos) host_ = host_.substr(p + 3);
  }

  ~CurlTransport() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    if (multi_ != nullptr) curl_multi_wakeup(multi_);
    if (loop_.joinable()) loop_.join();
    if (multi_ != nullptr) curl_multi_cleanup(multi_);
    if (share_ != nullptr) curl_share_cleanup(share_);
  }

  Status Init() {
    GlobalInit();
    share_ = curl_share_init();
    multi_ = curl_multi_init();
    if (share_ == nullptr || multi_ == nullptr) return InternalError("curl init failed");
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &CurlTransport::Lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &CurlTransport::Unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    loop_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  StatusOr<Response> Do(const Request& request) override {
    auto t = std::make_shared<Transfer>();
    t->request = request;
    LS_RETURN_IF_ERROR(Setup(t.get()));
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    if (request.method == "GET" && options_.read_stall_timeout.count() > 0) {
      curl_easy_setopt(t->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(t->easy, CURLOPT_LOW_SPEED_TIME,
                       static_cast<long>(options_.read_stall_timeout.count()));
    }
    if (request.cancel != nullptr) {
      if (request.cancel->load()) return CancelledError("request cancelled");
      t->cancel = request.cancel;
      curl_easy_setopt(t->easy, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(t->easy, CURLOPT_XFERINFOFUNCTION, &OnProgress);
      curl_easy_setopt(t->easy, CURLOPT_XFERINFODATA, t.get());
    }
    auto future = t->done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return CancelledError("transport is shutting down");
      pending_.push_back(t);
    }
    curl_multi_wakeup(multi_);
    return future.get();
  }

  StatusOr<Response> Stream(const Request& request, const StreamOptions& options,
                            const LineHandler& on_line) override {
    Transfer t;
    t.request = request;
    t.on_line = &on_line;
    t.cancel = options.cancel;
    LS_RETURN_IF_ERROR(Setup(&t));
    // "No byte for idle_timeout" ends the stream; there is no total timeout.
    curl_easy_setopt(t.easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(t.easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.idle_timeout.count()));
    curl_easy_setopt(t.easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(t.easy, CURLOPT_XFERINFOFUNCTION, &OnProgress);
    curl_easy_setopt(t.easy, CURLOPT_XFERINFODATA, &t);
    const CURLcode rc = curl_easy_perform(t.easy);
    if (t.stopped_by_handler) return CancelledError("stream stopped by handler");
    if (t.line_too_long) {
      return ResourceExhaustedError("stream line longer than " +
                                    std::to_string(kMaxStreamLineBytes) + " bytes");
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK || rc == CURLE_WRITE_ERROR) {
      if (t.cancel != nullptr && t.cancel->load()) return CancelledError("stream cancelled");
    }
    if (rc != CURLE_OK) return CurlError(rc, t.errbuf.data());
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.response.status);
    return std::move(t.response);
  }

  std::string Host() const override { return host_; }

 private:
  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<CurlTransport*>(user)->share_locks_[static_cast<size_t>(data) % kLocks].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<CurlTransport*>(user)->share_locks_[static_cast<size_t>(data) % kLocks].unlock();
  }

  Status Setup(Transfer* t) {
    t->easy = curl_easy_init();
    if (t->easy == nullptr) return InternalError("curl_easy_init failed");
    CURL* e = t->easy;
    const std::string url = config_.server + t->request.path;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_SHARE, share_);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf.data());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     options_.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);  // prefer multiplexing over a new connection
    // curl allocates a 64 KiB upload buffer for every transfer (the request goes out through
    // it), held while the transfer is in flight. A heap profile of the 500-gang burst found 8.4
    // MB of them at its peak, about 130 transfers, for bodies of a few KiB; with 16 KiB, curl's
    // minimum, 1.9 MB (bench/RESULTS.md, "Where the operator's memory goes"). A larger body is
    // still sent whole, in several pieces (tests/integration/kube/crud_test.cc).
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, kUploadBufferBytes);
    LS_RETURN_IF_ERROR(SetupTls(e, t));
    LS_RETURN_IF_ERROR(SetupHeaders(t));
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->request.method.c_str());
    if (t->request.method == "HEAD") curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    if (!t->request.body.empty() || t->request.method == "POST" || t->request.method == "PUT" ||
        t->request.method == "PATCH") {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->request.body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(t->request.body.size()));
    }
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    if (t->request.fence) {
#if LIBCURL_VERSION_NUM >= 0x075000
      curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &OnPrereq);
      curl_easy_setopt(e, CURLOPT_PREREQDATA, t);
#endif
    }
    return Status::Ok();
  }

  Status SetupTls(CURL* e, Transfer* t) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    const std::string* ca = &config_.ca_pem;
    if (config_.ca_file != nullptr) {
      // The bundle as it is now: a rotated ca.crt verifies the next new connection (curl does
      // not reuse a connection made under another CA bundle).
      LS_ASSIGN_OR_RETURN(t->ca_pem, config_.ca_file->Token());
      ca = &t->ca_pem;
    }
    if (!ca->empty()) {
      curl_blob blob{const_cast<char*>(ca->data()), ca->size(), CURL_BLOB_NOCOPY};
      if (curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK) {
        return InternalError("curl lacks CURLOPT_CAINFO_BLOB");
      }
    }
    if (!config_.client_cert_pem.empty()) {
      curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()),
                     config_.client_cert_pem.size(), CURL_BLOB_NOCOPY};
      curl_blob key{const_cast<char*>(config_.client_key_pem.data()),
                    config_.client_key_pem.size(), CURL_BLOB_NOCOPY};
      curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
      if (curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK ||
          curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK) {
        return InternalError("curl lacks CURLOPT_SSLCERT_BLOB");
      }
    }
    return Status::Ok();
  }

  Status SetupHeaders(Transfer* t) {
    auto add = [t](const std::string& h) { t->headers = curl_slist_append(t->headers, h.c_str()); };
    add("Accept: application/json");
    add("User-Agent: lockstep-operator");
    add("Expect:");  // no 100-continue round trip for large bodies
    if (!t->request.content_type.empty()) add("Content-Type: " + t->request.content_type);
    if (config_.token != nullptr) {
      LS_ASSIGN_OR_RETURN(std::string token, config_.token->Token());
      if (!token.empty()) add("Authorization: Bearer " + token);
    }
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    return Status::Ok();
  }

  void Loop() {
    std::vector<std::shared_ptr<Transfer>> active;
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_ && pending_.empty()) break;
        for (auto& t : pending_) {
          curl_multi_add_handle(multi_, t->easy);
          active.push_back(std::move(t));
        }
        pending_.clear();
      }
      int running = 0;
      curl_multi_perform(multi_, &running);
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        Complete(msg->easy_handle, msg->data.result, &active);
      }
      curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    }
    for (auto& t : active) {
      curl_multi_remove_handle(multi_, t->easy);
      t->done.set_value(CancelledError("transport is shutting down"));
    }
  }

  void Complete(CURL* easy, CURLcode rc, std::vector<std::shared_ptr<Transfer>>* active) {
    Transfer* raw = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &raw);
    curl_multi_remove_handle(multi_, easy);
    for (auto it = active->begin(); it != active->end(); ++it) {
      if (it->get() != raw) continue;
      std::shared_ptr<Transfer> t = std::move(*it);
      active->erase(it);
      if (t->fenced) {
        t->done.set_value(
            FailedPreconditionError(t->request.method + " " + t->request.path +
                                    ": not sent, this process may no longer write (lease lost)"));
      } else if (rc != CURLE_OK) {
        t->done.set_value(CurlError(rc, t->errbuf.data()));
      } else {
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &t->response.status);
        t->done.set_value(std::move(t->response));
      }
      return;
    }
  }

  static constexpr size_t kLocks = 16;
  const ClusterConfig config_;
  const CurlTransportOptions options_;
  std::string host_;
  CURLSH* share_ = nullptr;
  CURLM* multi_ = nullptr;
  std::array<std::mutex, kLocks> share_locks_;
  std::mutex mu_;
  bool stopping_ = false;                             // guarded by mu_
  std::vector<std::shared_ptr<Transfer>> pending_;    // guarded by mu_
  std::thread loop_;
};

}  // namespace

StatusOr<std::unique_ptr<Transport>> NewCurlTransport(const ClusterConfig& config,
                                                      const CurlTransportOptions& options) {
  if (config.server.rfind("https://", 0) != 0) {
    return InvalidArgumentError("server must be an https:// URL, got " + config.server);
  }
  auto transport = std::make_unique<CurlTransport>(config, options);
  LS_RETURN_IF_ERROR(transport->Init());
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace lockstep::kube
