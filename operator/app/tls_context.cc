#include "operator/app/tls_context.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "common/log.h"

namespace lockstep::app {
namespace {

template <typename T, void (*F)(T*)>
using Owned = std::unique_ptr<T, std::integral_constant<decltype(F), F>>;

Status OpenSslFailure(const std::string& what) {
  char buf[256] = "unknown error";
  if (unsigned long e = ERR_get_error()) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return InternalError(what + ": " + buf);
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// "mtime.nsec:size" of both files; "" when either cannot be stat'ed.
std::string Stamp(const std::string& a, const std::string& b) {
  std::string out;
  for (const std::string* path : {&a, &b}) {
    struct stat st {};
    if (::stat(path->c_str(), &st) != 0) return "";
    out += std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
           std::to_string(st.st_size) + ";";
  }
  return out;
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

Status AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION, X509_EXTENSION_free> ext(
      X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslFailure("certificate extension " + value);
  }
  return Status::Ok();
}

}  // namespace

TlsServerContext::~TlsServerContext() { SSL_CTX_free(ctx_); }

StatusOr<std::unique_ptr<TlsServerContext>> TlsServerContext::FromFiles(
    std::string cert_file, std::string key_file, std::chrono::milliseconds reload_check,
    const Clock& clock) {
  std::unique_ptr<TlsServerContext> c(new TlsServerContext());
  c->reload_check_ = reload_check;
  c->clock_ = &clock;
  c->cert_file_ = std::move(cert_file);
  c->key_file_ = std::move(key_file);
  LS_RETURN_IF_ERROR(c->LoadFiles());
  c->next_check_ = clock.Now() + reload_check;
  return c;
}

StatusOr<std::unique_ptr<TlsServerContext>> TlsServerContext::SelfSigned(
    const std::string& common_name, const std::vector<std::string>& dns_names) {
  Owned<EVP_PKEY, EVP_PKEY_free> key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslFailure("EVP_EC_gen");
  Owned<X509, X509_free> cert(X509_new());
  if (!cert) return OpenSslFailure("X509_new");
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return OpenSslFailure("RAND_bytes");
  serial[0] &= 0x7f;  // positive
  Owned<BIGNUM, BN_free> bn(BN_bin2bn(serial, sizeof(serial), nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return OpenSslFailure("serial number");
  }
  X509_gmtime_adj(X509_getm_notBefore(cert.get()),
                  -3600);  // clocks a little behind still accept it
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1) {
    return OpenSslFailure("subject name");
  }
  std::string san;
  for (const std::string& dns : dns_names) san += "DNS:" + dns + ",";
  san += "IP:127.0.0.1";
  LS_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_alt_name, san));
  LS_RETURN_IF_ERROR(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  LS_RETURN_IF_ERROR(AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature"));
  LS_RETURN_IF_ERROR(AddExtension(cert.get(), NID_ext_key_usage, "serverAuth"));
  if (X509_set_pubkey(cert.get(), key.get()) != 1 ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
    return OpenSslFailure("signing the certificate");
  }
  Owned<BIO, BIO_free_all> cert_bio(BIO_new(BIO_s_mem())), key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return OpenSslFailure("PEM_write");
  }
  std::unique_ptr<TlsServerContext> c(new TlsServerContext());
  LS_RETURN_IF_ERROR(c->Load(BioText(cert_bio.get()), BioText(key_bio.get())));
  return c;
}

Status TlsServerContext::LoadFiles() {
  const std::string stamp = Stamp(cert_file_, key_file_);
  LS_ASSIGN_OR_RETURN(std::string cert, ReadFile(cert_file_));
  LS_ASSIGN_OR_RETURN(std::string key, ReadFile(key_file_));
  LS_RETURN_IF_ERROR(Load(cert, key).WithContext(cert_file_ + " and " + key_file_));
  files_stamp_ = stamp;
  return Status::Ok();
}

Status TlsServerContext::Load(const std::string& cert_pem, const std::string& key_pem) {
  Owned<SSL_CTX, SSL_CTX_free> ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return OpenSslFailure("SSL_CTX_new");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // The server writes from a std::string that may grow between tries; it keeps the offset.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // One request per connection: nothing to resume.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  Owned<BIO, BIO_free_all> cert_bio(
      BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
  Owned<X509, X509_free> leaf(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!leaf || SSL_CTX_use_certificate(ctx.get(), leaf.get()) != 1) {
    return OpenSslFailure("reading the certificate");
  }
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx.get(), extra) != 1) {  // takes ownership on success
      X509_free(extra);
      return OpenSslFailure("adding an intermediate certificate");
    }
  }
  ERR_clear_error();  // the loop ends on "no start line"
  Owned<BIO, BIO_free_all> key_bio(
      BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
  Owned<EVP_PKEY, EVP_PKEY_free> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!key || SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return OpenSslFailure("reading the private key (or it does not match the certificate)");
  }
  Owned<BIO, BIO_free_all> out(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(out.get(), leaf.get());
  SSL_CTX_free(ctx_);
  ctx_ = ctx.release();
  cert_pem_ = BioText(out.get());
  return Status::Ok();
}

SSL_CTX* TlsServerContext::Current() {
  if (cert_file_.empty()) return ctx_;
  const auto now = clock_->Now();
  if (now < next_check_) return ctx_;
  next_check_ = now + reload_check_;
  const std::string stamp = Stamp(cert_file_, key_file_);
  if (stamp.empty() || stamp == files_stamp_) return ctx_;
  if (Status s = LoadFiles(); !s.ok()) {
    log::Warning("cannot reload the metrics serving certificate; serving the previous one",
                 {{"error", s.ToString()}});
    files_stamp_ = stamp;  // try again when the files change once more
  } else {
    log::Info("reloaded the metrics serving certificate",
              {{"cert", cert_file_}, {"sha256", Fingerprint()}});
  }
  return ctx_;
}

std::string TlsServerContext::Fingerprint() const {
  Owned<BIO, BIO_free_all> bio(
      BIO_new_mem_buf(cert_pem_.data(), static_cast<int>(cert_pem_.size())));
  Owned<X509, X509_free> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return "";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (X509_digest(cert.get(), EVP_sha256(), md, &n) != 1) return "";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    if (i) out += ':';
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

}  // namespace lockstep::app
