#include "operator/app/options.h"

#include <cstdlib>
#include <functional>
#include <map>

#include "operator/app/http_server.h"

namespace lockstep::app {
namespace {

Status ParseInt(const std::string& flag, const std::string& v, int min, int* out) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n < min || n > 1000000) {
    return InvalidArgumentError("--" + flag + ": want an integer >= " + std::to_string(min) +
                                ", got \"" + v + "\"");
  }
  *out = static_cast<int>(n);
  return Status::Ok();
}

Status ParseDouble(const std::string& flag, const std::string& v, double* out) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') {
    return InvalidArgumentError("--" + flag + ": want a number, got \"" + v + "\"");
  }
  *out = d;
  return Status::Ok();
}

Status ParseBool(const std::string& flag, const std::string& v, bool* out) {
  if (v == "true" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "0") {
    *out = false;
  } else {
    return InvalidArgumentError("--" + flag + ": want true or false, got \"" + v + "\"");
  }
  return Status::Ok();
}

// "k=v,k2=v2" (no spaces); empty is no labels.
Status ParseLabels(const std::string& flag, const std::string& v,
                   std::map<std::string, std::string>* out) {
  out->clear();
  size_t start = 0;
  while (start < v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    const std::string pair = v.substr(start, comma - start);
    const size_t eq = pair.find('=');
    if (eq == 0 || eq == std::string::npos || pair.find_first_of(" \t") != std::string::npos) {
      return InvalidArgumentError("--" + flag + ": want key=value[,key=value...], got \"" + v +
                                  "\"");
    }
    (*out)[pair.substr(0, eq)] = pair.substr(eq + 1);
    start = comma + 1;
  }
  return Status::Ok();
}

// Whole seconds with a unit: "20s", "2m", "1h" (what Kubernetes components take, without
// fractions or compound forms, which a lease grace never needs).
Status ParseSeconds(const std::string& flag, const std::string& v, std::chrono::seconds* out) {
  const Status bad = InvalidArgumentError("--" + flag +
                                          ": want a duration like 20s or 2m (at least 1s), got \"" +
                                          v + "\"");
  if (v.size() < 2 || v[0] < '0' || v[0] > '9') return bad;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (errno != 0 || n < 0 || n > 1000000) return bad;
  const std::string unit(end);
  long seconds = 0;
  if (unit == "s") {
    seconds = n;
  } else if (unit == "m") {
    seconds = n * 60;
  } else if (unit == "h") {
    seconds = n * 3600;
  } else {
    return bad;
  }
  if (seconds < 1) return bad;
  *out = std::chrono::seconds(seconds);
  return Status::Ok();
}

Status CheckAddress(const std::string& flag, const std::string& v) {
  if (v == "0") return Status::Ok();
  std::string host;
  int port = 0;
  return ParseBindAddress(v, &host, &port).WithContext("--" + flag);
}

using Setter = std::function<Status(const std::string&, OperatorOptions*)>;

const std::map<std::string, Setter>& Setters() {
  static const auto* setters = new std::map<std::string, Setter>{
      {"kubeconfig", [](const std::string& v, OperatorOptions* o) {
         o->kubeconfig = v;
         return Status::Ok();
       }},
      {"namespace", [](const std::string& v, OperatorOptions* o) {
         if (v.empty()) return InvalidArgumentError("--namespace: empty value");
         o->namespaces.push_back(v);
         return Status::Ok();
       }},
      {"create-placed", [](const std::string& v, OperatorOptions* o) {
         return ParseBool("create-placed", v, &o->create_placed);
       }},
      {"gang-scheduler", [](const std::string& v, OperatorOptions* o) {
         return ParseBool("gang-scheduler", v, &o->gang_scheduler);
       }},
      {"kueue", [](const std::string& v, OperatorOptions* o) {
         return ParseBool("kueue", v, &o->kueue);
       }},
      {"leader-elect", [](const std::string& v, OperatorOptions* o) {
         return ParseBool("leader-elect", v, &o->leader_elect);
       }},
      {"leader-election-namespace", [](const std::string& v, OperatorOptions* o) {
         o->leader_election_namespace = v;
         return Status::Ok();
       }},
      {"leader-election-id", [](const std::string& v, OperatorOptions* o) {
         if (v.empty()) return InvalidArgumentError("--leader-election-id: empty value");
         o->leader_election_id = v;
         return Status::Ok();
       }},
      {"metrics-bind-address", [](const std::string& v, OperatorOptions* o) {
         o->metrics_bind_address = v;
         return CheckAddress("metrics-bind-address", v);
       }},
      {"metrics-secure", [](const std::string& v, OperatorOptions* o) {
         return ParseBool("metrics-secure", v, &o->metrics_secure);
       }},
      {"metrics-cert-path", [](const std::string& v, OperatorOptions* o) {
         o->metrics_cert_path = v;
         return Status::Ok();
       }},
      {"metrics-cert-name", [](const std::string& v, OperatorOptions* o) {
         if (v.empty()) return InvalidArgumentError("--metrics-cert-name: empty value");
         o->metrics_cert_name = v;
         return Status::Ok();
       }},
      {"metrics-cert-key", [](const std::string& v, OperatorOptions* o) {
         if (v.empty()) return InvalidArgumentError("--metrics-cert-key: empty value");
         o->metrics_cert_key = v;
         return Status::Ok();
       }},
      {"health-probe-bind-address", [](const std::string& v, OperatorOptions* o) {
         o->health_probe_bind_address = v;
         return CheckAddress("health-probe-bind-address", v);
       }},
      {"qps", [](const std::string& v, OperatorOptions* o) { return ParseDouble("qps", v, &o->qps); }},
      {"scheduler-qps", [](const std::string& v, OperatorOptions* o) {
         return ParseDouble("scheduler-qps", v, &o->scheduler_qps);
       }},
      {"scheduler-burst", [](const std::string& v, OperatorOptions* o) {
         return ParseInt("scheduler-burst", v, 1, &o->scheduler_burst);
       }},
      {"burst", [](const std::string& v, OperatorOptions* o) {
         return ParseInt("burst", v, 1, &o->burst);
       }},
      {"workers", [](const std::string& v, OperatorOptions* o) {
         return ParseInt("workers", v, 1, &o->workers);
       }},
      {"node-lease-grace", [](const std::string& v, OperatorOptions* o) {
         return ParseSeconds("node-lease-grace", v, &o->node_lease_grace);
       }},
      {"node-silence-hold-fraction", [](const std::string& v, OperatorOptions* o) {
         double f = 0;
         if (Status st = ParseDouble("node-silence-hold-fraction", v, &f); !st.ok()) return st;
         // NaN fails both comparisons, so it is refused here too.
         if (!(f >= 0 && f <= 1)) {
           return InvalidArgumentError("--node-silence-hold-fraction: want 0 (off) to 1, got \"" +
                                       v + "\"");
         }
         o->node_silence_hold_fraction = f;
         return Status::Ok();
       }},
      {"on-node-cordon", [](const std::string& v, OperatorOptions* o) {
         if (v != "ignore" && v != "restart") {
           return InvalidArgumentError("--on-node-cordon: want ignore or restart, got \"" + v +
                                       "\"");
         }
         o->restart_on_node_cordon = v == "restart";
         return Status::Ok();
       }},
      {"log-format", [](const std::string& v, OperatorOptions* o) {
         if (!log::ParseFormat(v, &o->log_format)) {
           return InvalidArgumentError("--log-format: want json or text, got \"" + v + "\"");
         }
         return Status::Ok();
       }},
      {"operator-pod-labels", [](const std::string& v, OperatorOptions* o) {
         return ParseLabels("operator-pod-labels", v, &o->operator_pod_labels);
       }},
      {"launcher-image", [](const std::string& v, OperatorOptions* o) {
         if (v.empty()) return InvalidArgumentError("--launcher-image: empty value");
         o->launcher_image = v;
         return Status::Ok();
       }},
  };
  return *setters;
}

bool IsBoolFlag(const std::string& name) {
  return name == "leader-elect" || name == "gang-scheduler" || name == "kueue" ||
         name == "create-placed" || name == "metrics-secure";
}

}  // namespace

StatusOr<OperatorOptions> ParseFlags(const std::vector<std::string>& args) {
  OperatorOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return InvalidArgumentError("unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = Setters().find(name);
    if (it == Setters().end()) return InvalidArgumentError("unknown flag --" + name);
    if (!has_value) {
      if (IsBoolFlag(name)) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return InvalidArgumentError("flag --" + name + " needs a value");
      }
    }
    LS_RETURN_IF_ERROR(it->second(value, &o));
  }
  if (!o.metrics_secure && !o.metrics_cert_path.empty()) {
    return InvalidArgumentError("--metrics-cert-path needs --metrics-secure");
  }
  return o;
}

std::string Usage() {
  return R"(Usage: lockstep-operator [flags]

Runs the Lockstep TrainingJob controller.

Flags:
  --kubeconfig PATH                  kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --namespace NS                     watch only NS; repeatable (default: all namespaces)
  --leader-elect                     run leader election; only the leader reconciles
  --leader-election-namespace NS     namespace of the Lease (default: $POD_NAMESPACE or in-cluster)
  --leader-election-id NAME          name of the Lease (default lockstep-operator)
  --metrics-bind-address ADDR        Prometheus /metrics on host:port (default :8080; 0 disables)
  --metrics-secure[=true|false]      serve /metrics over HTTPS, only to bearer tokens allowed to get
                                     the non-resource URL /metrics (TokenReview, then
                                     SubjectAccessReview, as kubebuilder's --metrics-secure;
                                     default false; docs/install.md "Secure metrics")
  --metrics-cert-path DIR            with --metrics-secure: directory of the serving certificate,
                                     e.g. a mounted kubernetes.io/tls Secret, reread when it
                                     changes (default: a self-signed certificate made at start).
                                     The --metrics-cert-* names are kubebuilder's, so its
                                     manifests and cert-manager Secrets work unchanged
  --metrics-cert-name FILE           certificate file in DIR, then intermediates (default tls.crt)
  --metrics-cert-key FILE            private key file in DIR (default tls.key)
  --health-probe-bind-address ADDR   /healthz and /readyz on host:port (default :8081; 0 disables)
  --qps N                            client-side API requests per second (default 200; <=0 off)
  --burst N                          client-side API burst (default 400)
  --workers N                        concurrent reconciles (default 16)
  --log-format json|text             log format (default text)
  --launcher-image IMAGE             image holding /lockstep-launcher (default lockstep/launcher:0.1.0)
  --gang-scheduler=true|false        bind pods of schedulerName lockstep, whole gangs at once (default true)
  --create-placed=true|false         with the gang scheduler: create a job's whole gang already placed
                                     (spec.nodeName at create, no bind; default true)
  --kueue=true|false                 jobs labelled kueue.x-k8s.io/queue-name wait for Kueue's admission of a
                                     Workload the operator owns (default false; docs/queues.md)
  --scheduler-qps N                  the scheduler's client-side requests per second (default 500)
  --scheduler-burst N                the scheduler's client-side burst (default 1000)
  --node-lease-grace DURATION        a node whose kube-node-lease Lease is not renewed for this
                                     long is lost and its jobs restart (default 20s; e.g. 30s, 1m)
  --node-silence-hold-fraction F     while at least this fraction of the nodes (and 3 or more)
                                     are silent at once (Lease expired or Ready=Unknown), silence
                                     makes no node lost: the control plane is the likelier fault
                                     (default 0.55, as Kubernetes' node controller; 0 = off)
  --on-node-cordon ignore|restart    restart jobs off a cordoned node or not (default ignore)
  --operator-pod-labels K=V,...      this operator's pod labels: each job's NetworkPolicy lets
                                     pods with them, in $POD_NAMESPACE, reach the rendezvous
                                     port (default: any pod of $POD_NAMESPACE)
  --help                             show this help
)";
}

}  // namespace lockstep::app
