// Added to sigs.k8s.io/kube-network-policies' source by hack/build-tools.sh
// (build_kube_network_policies) before it is built for the kubelet nodes.
//
// kube-network-policies sends the first packet of every new connection to a pod to user space
// with nftables' `queue` statement (expr.Queue), which needs the kernel's nft_queue
// (CONFIG_NFT_QUEUE). The kernels of these machines are built without it, but with the xtables
// NFQUEUE target and nft_compat, which iptables-nft uses for the same verdict. nfqueueExpr is
// that target, as an nftables expression: the same queue number, the same bypass flag, the same
// packets reaching the same user-space code; the rules are otherwise unchanged.

package networkpolicy

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// nfqueueExpr is the NFQUEUE target, revision 3 (struct xt_NFQ_info_v3: queuenum, queues_total,
// flags; host byte order, padded to 8 bytes as XT_ALIGN asks).
func nfqueueExpr(num uint16, bypass bool) expr.Any {
	info := make(xt.Unknown, 8)
	binary.NativeEndian.PutUint16(info[0:], num)
	binary.NativeEndian.PutUint16(info[2:], 1) // one queue: the kernel refuses 0
	if bypass {
		binary.NativeEndian.PutUint16(info[4:], 1) // NFQ_FLAG_BYPASS
	}
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &info}
}
