// The --metrics-secure flags (kubebuilder's names and defaults).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/app/options.h"

namespace lockstep::app {
namespace {

TEST(MetricsOptionsTest, SecureMetricsFlags) {
  struct Case {
    std::vector<std::string> args;
    bool ok;
    bool secure;
    std::string path, name, key;
  };
  const Case cases[] = {
      {{}, true, false, "", "tls.crt", "tls.key"},
      {{"--metrics-secure"}, true, true, "", "tls.crt", "tls.key"},
      {{"--metrics-secure=false"}, true, false, "", "tls.crt", "tls.key"},
      {{"--metrics-secure", "--metrics-cert-path=/certs"},
       true,
       true,
       "/certs",
       "tls.crt",
       "tls.key"},
      {{"--metrics-cert-path", "/c", "--metrics-secure=true", "--metrics-cert-name=cert.pem",
        "--metrics-cert-key", "key.pem"},
       true,
       true,
       "/c",
       "cert.pem",
       "key.pem"},
      {{"--metrics-cert-path=/certs"}, false, false, "", "", ""},  // a certificate for HTTP?
      {{"--metrics-secure=maybe"}, false, false, "", "", ""},
      {{"--metrics-secure", "--metrics-cert-name="}, false, false, "", "", ""},
      {{"--metrics-secure", "--metrics-cert-key="}, false, false, "", "", ""},
  };
  for (const Case& c : cases) {
    std::string what;
    for (const std::string& a : c.args) what += a + " ";
    StatusOr<OperatorOptions> o = ParseFlags(c.args);
    EXPECT_EQ(o.ok(), c.ok) << what;
    if (!o.ok() || !c.ok) continue;
    EXPECT_EQ(o->metrics_secure, c.secure) << what;
    EXPECT_EQ(o->metrics_cert_path, c.path) << what;
    EXPECT_EQ(o->metrics_cert_name, c.name) << what;
    EXPECT_EQ(o->metrics_cert_key, c.key) << what;
  }
  for (const char* flag :
       {"--metrics-secure", "--metrics-cert-path", "--metrics-cert-name", "--metrics-cert-key"}) {
    EXPECT_NE(Usage().find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace lockstep::app
