// CoreDNS for the kubelet nodes' cluster DNS (hack/build-tools.sh, build_coredns): CoreDNS's own
// main, with only the plugins hack/lib/cluster-kubelet.sh's Corefile uses compiled in, as
// CoreDNS's docs describe for a custom build. The full plugin set (cloud DNS providers, etcd,
// dnstap, ...) took 10 minutes to compile on these 2-core machines; this one a fraction.

package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/template"
)

// The plugins' order of execution: the order of CoreDNS's plugin.cfg, which these keep.
var directives = []string{"bind", "health", "errors", "cache", "template", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
