#include "tests/e2e/agent/serving_cert.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <random>
#include <thread>

#include "common/log.h"
#include "operator/kube/api_error.h"
#include "operator/kube/base64.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;
template <typename T, void (*F)(T*)>
using Owned = std::unique_ptr<T, std::integral_constant<decltype(F), F>>;

kube::ResourceRef Csrs() {
  return {"certificates.k8s.io", "v1", "certificatesigningrequests", false};
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

Status OpenSslFailure(const char* what) {
  char buf[256] = "unknown";
  if (unsigned long e = ERR_get_error()) ERR_error_string_n(e, buf, sizeof(buf));
  return InternalError(std::string(what) + ": " + buf);
}

Status AddName(X509_NAME* name, const char* field, const std::string& value) {
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                 0) != 1) {
    return OpenSslFailure("X509_NAME_add_entry_by_txt");
  }
  return Status::Ok();
}

void FreeExtensions(STACK_OF(X509_EXTENSION) * s) {
  sk_X509_EXTENSION_pop_free(s, X509_EXTENSION_free);
}

Status AddSubjectAltName(X509_REQ* req, const std::string& node, const std::string& ip) {
  Owned<STACK_OF(X509_EXTENSION), FreeExtensions> exts(sk_X509_EXTENSION_new_null());
  const std::string san = "IP:" + ip + ",DNS:" + node;
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, san.c_str());
  if (ext == nullptr) return OpenSslFailure("subjectAltName");
  sk_X509_EXTENSION_push(exts.get(), ext);
  if (X509_REQ_add_extensions(req, exts.get()) != 1) {
    return OpenSslFailure("X509_REQ_add_extensions");
  }
  return Status::Ok();
}

std::string RandomSuffix() {
  std::random_device rd;
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 6; ++i) s += kAlphabet[rd() % (sizeof(kAlphabet) - 1)];
  return s;
}

json CsrObject(const std::string& name, const std::string& csr_pem) {
  return {{"apiVersion", "certificates.k8s.io/v1"},
          {"kind", "CertificateSigningRequest"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"request", kube::Base64Encode(csr_pem)},
            {"signerName", "kubernetes.io/kubelet-serving"},
            {"expirationSeconds", 7 * 24 * 3600},
            {"usages", json::array({"digital signature", "server auth"})}}}};
}

Status Approve(kube::RestClient& client, json csr) {
  csr["status"]["conditions"] = json::array(
      {{{"type", "Approved"},
        {"status", "True"},
        {"reason", "LockstepTestNodeAgent"},
        {"message", "the test node agent approves its own kubelet serving certificate"}}});
  return client.Update(Csrs(), "", csr["metadata"]["name"].get<std::string>(), csr, "approval")
      .status();
}

}  // namespace

StatusOr<KeyAndRequest> MakeKubeletServingRequest(const std::string& node, const std::string& ip) {
  Owned<EVP_PKEY, EVP_PKEY_free> key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslFailure("EVP_EC_gen");
  Owned<X509_REQ, X509_REQ_free> req(X509_REQ_new());
  X509_REQ_set_version(req.get(), 0);
  X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  LS_RETURN_IF_ERROR(AddName(subject, "O", "system:nodes"));
  LS_RETURN_IF_ERROR(AddName(subject, "CN", "system:node:" + node));
  LS_RETURN_IF_ERROR(AddSubjectAltName(req.get(), node, ip));
  if (X509_REQ_set_pubkey(req.get(), key.get()) != 1) return OpenSslFailure("X509_REQ_set_pubkey");
  if (X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0)
    return OpenSslFailure("X509_REQ_sign");
  Owned<BIO, BIO_free_all> key_bio(BIO_new(BIO_s_mem())), req_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1 ||
      PEM_write_bio_X509_REQ(req_bio.get(), req.get()) != 1) {
    return OpenSslFailure("PEM_write");
  }
  return KeyAndRequest{BioText(key_bio.get()), BioText(req_bio.get())};
}

StatusOr<ServingCertificate> RequestServingCertificate(kube::RestClient& client,
                                                       const std::string& node,
                                                       const std::string& ip,
                                                       std::chrono::seconds timeout) {
  LS_ASSIGN_OR_RETURN(KeyAndRequest kr, MakeKubeletServingRequest(node, ip));
  const std::string name = "lockstep-agent-" + node + "-" + RandomSuffix();
  LS_ASSIGN_OR_RETURN(json created, client.Create(Csrs(), "", CsrObject(name, kr.csr_pem)));
  LS_RETURN_IF_ERROR(Approve(client, created));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string issued, failure;
  while (std::chrono::steady_clock::now() < deadline) {
    LS_ASSIGN_OR_RETURN(json csr, client.Get(Csrs(), "", name));
    const json& status = csr.value("status", json::object());
    if (status.contains("certificate") && status["certificate"].is_string() &&
        !status["certificate"].get<std::string>().empty()) {
      StatusOr<std::string> pem = kube::Base64Decode(status["certificate"].get<std::string>());
      if (!pem.ok()) return pem.status();
      issued = *pem;
      break;
    }
    for (const json& c : status.value("conditions", json::array())) {
      if (c.value("type", "") == "Failed" || c.value("type", "") == "Denied") {
        failure = c.value("type", "") + ": " + c.value("message", "");
      }
    }
    if (!failure.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Status deleted = client.Delete(Csrs(), "", name).status();
  if (!deleted.ok() && !IsNotFound(deleted)) {
    log::Warning("cannot delete the serving certificate request",
                 {{"csr", name}, {"error", deleted.ToString()}});
  }
  if (!failure.empty())
    return FailedPreconditionError("certificate request " + name + " " + failure);
  if (issued.empty()) {
    return DeadlineExceededError(
        "certificate request " + name + " was approved but not issued in " +
        std::to_string(timeout.count()) +
        " s: does kube-controller-manager have --cluster-signing-cert-file?");
  }
  return ServingCertificate{issued, kr.key_pem};
}

}  // namespace lockstep::e2e
