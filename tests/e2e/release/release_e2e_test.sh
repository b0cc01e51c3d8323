#!/usr/bin/env bash
# A release through a real OCI registry, as a user installs it (docs/install.md, "From a
# registry"):
#   1. a distribution registry of the test's own (hack/lib/cluster-registry.sh registry_start,
#      TLS with a certificate from the cluster's CA, trusted through SSL_CERT_FILE only);
#   2. hack/release.sh VERSION --registry it: the registry serves every image build-images.sh
#      built under the digest it built (by digest and by the VERSION tag), and the chart
#      oci://<registry>/charts/lockstep:VERSION whose bytes are the package release.sh wrote,
#      with version and appVersion VERSION and both images referenced by those digests;
#   3. `helm install oci://<registry>/charts/lockstep --version VERSION` with no chart flag but
#      the two that share a test cluster (crds.install=false, rbac.scope=namespace): both
#      operator pods run on agent nodes from <registry>/lockstep/operator@<digest> and one
#      leads; a Generic TrainingJob's init containers run <registry>/lockstep/launcher@<digest>
#      and the job Succeeds.
# Steps 2 and 3 run the README's "Install on a cluster" commands as written, but for the
# registry (this test's), the release and namespace names (this test's) and the two flags above,
# so the README's install section is tested as it reads.
#   4. upgrade (issue 42 item 3): a long TrainingJob runs; release N+1 (a new operator image:
#      the same tree packed at another SOURCE_DATE_EPOCH, so another digest) is published and
#      `helm upgrade`d to from the registry; both operator pods run the new digest, one leads,
#      and the job kept running through it (same attempt, same pods) and Succeeds when told.
#      The CRD stays the cluster's here (crds.install=false): tests/integration/helm checks that
#      an upgrade applies the chart's CRD changes.
# The test node agent cannot pull (docs/e2e.md, "Images"): the test pulls both images from the
# registry by digest with skopeo into the OCI layouts the agent's store is filled from, so what
# runs is what the registry served. Nodes that pull for themselves (real kubelets) come with the
# real-node clusters.
#
#   tests/e2e/release/release_e2e_test.sh BUILD_DIR
# Needs root and $KUBECONFIG of a local cluster (hack/cluster.sh, whose CA signs the registry's
# certificate); prints LOCKSTEP_TEST_SKIPPED otherwise.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
BUILD="$(realpath -m "${1:-$REPO/build}")"
# shellcheck source=tests/lib/e2e.sh
source "$REPO/tests/lib/e2e.sh"
fail_context() {
  agent_fail_context
  [[ -f "${WORK:-}/registry/registry.log" ]] && tail -10 "$WORK/registry/registry.log"
}

[[ -n "${KUBECONFIG:-}" ]] || skip "KUBECONFIG unset (hack/cluster.sh up)"
(( EUID == 0 )) || skip "the test node agent and hack/build-images.sh need root"
require_tools kubectl helm jq umoci skopeo runc curl go
CLUSTER_PKI="$(dirname "$(realpath "$KUBECONFIG")")/pki"
[[ -f "$CLUSTER_PKI/ca.key" ]] || skip "no cluster CA beside $KUBECONFIG (hack/cluster.sh up)"
require_binaries lockstep-operator lockstep-launcher lockstep-test-node-agent
# shellcheck source=hack/lib/common.sh
source "$REPO/hack/lib/common.sh"
# shellcheck source=hack/lib/cluster-registry.sh
source "$REPO/hack/lib/cluster-registry.sh"

ID="$(head -c 16 /dev/urandom | md5sum | cut -c1-5)"
NS="release-e2e-$ID" RELEASE="rel$ID" BRIDGE="lsr$ID" BLOCK="block-release-$ID"
SUBNET="10.213.$(( RANDOM % 250 + 1 )).0/24"
NODES=("release-$ID-0" "release-$ID-1")
WORK="$(mktemp -d)"
# Where the long job's trainers look for their stop file: not under /tmp, which every pod has
# its own of.
TRIGGER="$(mktemp -d /var/tmp/release-e2e.XXXXX)"
STATE="$WORK/agent"
AGENT_PID=""

cleanup() {
  local rc=$?
  helm uninstall "$RELEASE" -n "$NS" >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  if [[ -n "$AGENT_PID" ]]; then
    kill -TERM "$AGENT_PID" 2>/dev/null || true
    local deadline=$((SECONDS + 60))
    while kill -0 "$AGENT_PID" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
    kill -0 "$AGENT_PID" 2>/dev/null && { kill -KILL "$AGENT_PID"; echo "FAIL: agent did not exit" >&2; rc=1; }
  fi
  if [[ -f "$WORK/registry/pid" ]]; then
    local pid; pid="$(cat "$WORK/registry/pid")"
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -rf "$WORK" "$TRIGGER"
  exit "$rc"
}
trap cleanup EXIT

# ---- 1. the registry ---------------------------------------------------------------------------

start_registry() {
  registry_start "$WORK/registry" "$CLUSTER_PKI" >"$WORK/registry-start.log" 2>&1 ||
    { cat "$WORK/registry-start.log" >&2; fail "the registry did not start"; }
  REGISTRY="$(cat "$WORK/registry/address")"
  # What `hack/cluster.sh up --registry` exports: the system's CAs plus the cluster's.
  export SSL_CERT_FILE="$WORK/registry/ca-bundle.crt" CURL_CA_BUNDLE="$WORK/registry/ca-bundle.crt"
  curl -fsS "https://$REGISTRY/v2/" >/dev/null || fail "curl does not trust the registry"
  ok "registry on https://$REGISTRY, certificate from the cluster's CA"
}

# ---- 2. hack/release.sh -----------------------------------------------------------------------

# The README's install commands, one per line, made to run here: README_INSTALL[0] releases,
# [1] installs, [2] waits for the rollout.
readme_install() {
  local block
  block="$(awk '/^## Install on a cluster/ {s = 1} s && /^```sh$/ {c = 1; next}
                c && /^```$/ {exit} c {print}' "$REPO/README.md")"
  mapfile -t README_INSTALL <<<"$block"
  (( ${#README_INSTALL[@]} == 3 )) || fail "README's install section has ${#README_INSTALL[@]} commands, not 3"
  local example; example="$(grep -o 'registry\.example\.com[a-z0-9/._-]*' <<<"${README_INSTALL[0]}" | head -1)"
  [[ -n "$example" ]] || fail "README's release command names no registry: ${README_INSTALL[0]}"
  VERSION="$(awk '{for (i = 1; i < NF; i++) if ($i ~ /release\.sh$/) print $(i + 1)}' <<<"${README_INSTALL[0]}")"
  [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "no version in ${README_INSTALL[0]}"
  local i
  for i in 0 1 2; do
    README_INSTALL[i]="${README_INSTALL[i]//$example/$REGISTRY}"
    README_INSTALL[i]="${README_INSTALL[i]//-n lockstep-system/-n $NS}"
  done
  [[ "${README_INSTALL[0]}" == "sudo -E hack/release.sh "* ]] || fail "README's release line: ${README_INSTALL[0]}"
  README_INSTALL[0]="${README_INSTALL[0]#sudo -E } --build-dir $BUILD --no-build --out $WORK/release"
  [[ "${README_INSTALL[1]}" == "helm install lockstep oci://"* ]] || fail "README's install line: ${README_INSTALL[1]}"
  README_INSTALL[1]="helm install $RELEASE ${README_INSTALL[1]#helm install lockstep } --set crds.install=false --set rbac.scope=namespace"
  README_INSTALL[2]="${README_INSTALL[2]//deployment\/lockstep/deployment/$RELEASE-lockstep} --timeout 120s"
}

release() {
  (cd "$REPO" && bash -c "${README_INSTALL[0]}") >"$WORK/published" 2>"$WORK/release.log" ||
    { tail -30 "$WORK/release.log" >&2; fail "the README's release command failed: ${README_INSTALL[0]}"; }
  local built; built="$(wc -l <"$WORK/release/images/digests")"
  (( built >= 2 )) || fail "build-images.sh built $built images"
  (( $(wc -l <"$WORK/published") == built + 1 )) ||
    fail "release.sh published $(wc -l <"$WORK/published") artifacts for $built images and a chart"
  cmp -s "$WORK/published" "$WORK/release/published" || fail "release.sh's stdout differs from its published file"
  ok "README's \`hack/release.sh $VERSION\`: $(awk -F@ '{print $1}' "$WORK/published" | tr '\n' ' ')"
}

# manifest_digest REFERENCE: sha256 of the manifest the registry serves for REFERENCE.
manifest_digest() { echo "sha256:$(skopeo inspect --raw "docker://$1" | sha256sum | cut -d' ' -f1)"; }

images_by_digest() {
  local ref digest name
  declare -gA DIGEST=()
  while read -r ref digest; do
    name="${ref%:*}"
    [[ "$(manifest_digest "$REGISTRY/$name@$digest")" == "$digest" ]] ||
      fail "$REGISTRY/$name@$digest is not served as built"
    [[ "$(manifest_digest "$REGISTRY/$name:$VERSION")" == "$digest" ]] ||
      fail "$REGISTRY/$name:$VERSION is not the built $digest"
    grep -qx "$REGISTRY/$name:$VERSION@$digest" "$WORK/published" || fail "$name not in release.sh's output"
    DIGEST["$name"]="$digest"
  done <"$WORK/release/images/digests"
  ok "images served under the digests built: $(for n in "${!DIGEST[@]}"; do printf '%s@%s... ' "$n" "${DIGEST[$n]:0:19}"; done)"
}

chart_by_digest() {
  local chart_digest; chart_digest="$(sed -n "s|^$REGISTRY/charts/lockstep:$VERSION@||p" "$WORK/published")"
  [[ -n "$chart_digest" ]] || fail "no chart in release.sh's output"
  local manifest layer
  manifest="$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
                "https://$REGISTRY/v2/charts/lockstep/manifests/$chart_digest")" ||
    fail "the registry has no chart manifest $chart_digest"
  [[ "sha256:$(printf '%s' "$manifest" | sha256sum | cut -d' ' -f1)" == "$chart_digest" ]] ||
    fail "the chart manifest does not match $chart_digest"
  layer="$(jq -r '.layers[] | select(.mediaType == "application/vnd.cncf.helm.chart.content.v1.tar+gzip") | .digest' <<<"$manifest")"
  [[ "$layer" == "sha256:$(sha256sum <"$WORK/release/lockstep-$VERSION.tgz" | cut -d' ' -f1)" ]] ||
    fail "the chart layer ($layer) is not the package release.sh wrote"
  # As a user reads it: helm, trusting the registry through SSL_CERT_FILE, then --ca-file alone.
  local chart values
  chart="$(helm show chart "oci://$REGISTRY/charts/lockstep" --version "$VERSION" 2>/dev/null)" ||
    fail "helm show chart oci://$REGISTRY/charts/lockstep --version $VERSION"
  grep -qx "version: $VERSION" <<<"$chart" && grep -qx "appVersion: $VERSION" <<<"$chart" ||
    fail "the chart's versions: $(grep -i version <<<"$chart")"
  values="$(SSL_CERT_FILE=/dev/null helm show values "oci://$REGISTRY/charts/lockstep" \
              --version "$VERSION" --ca-file "$CLUSTER_PKI/ca.crt" 2>&1)" ||
    fail "helm show values with --ca-file: $values"
  printf '%s\n' "$values" >"$WORK/values.yaml"
  local key name
  for key in image:lockstep/operator launcherImage:lockstep/launcher; do
    name="${key#*:}"
    python3 - "$WORK/values.yaml" "${key%%:*}" "$REGISTRY/$name" "${DIGEST[$name]}" <<'PY' ||
import sys, yaml
path, key, repository, digest = sys.argv[1:]
values = yaml.safe_load(open(path))
got = values[key]
sys.exit(0 if (got["repository"], got["digest"]) == (repository, digest) else f"{key}: {got}")
PY
      fail "the chart's $key does not name $REGISTRY/$name@${DIGEST[$name]}"
  done
  ok "chart oci://$REGISTRY/charts/lockstep:$VERSION@${chart_digest:0:19}...: the package's bytes, version $VERSION, images by digest"
}

# ---- 3. helm install from the registry ------------------------------------------------------

# The agent's image store, filled with what the registry serves (the agent cannot pull).
pull_for_the_agent() {
  local name
  mkdir -p "$WORK/pulled"
  for name in lockstep/operator lockstep/launcher; do
    skopeo copy -q --preserve-digests "docker://$REGISTRY/$name@${DIGEST[$name]}" \
      "oci:$WORK/pulled/${name##*/}:$REGISTRY/$name:$VERSION" || fail "skopeo pull of $name"
  done
}

start_agent() {
  start_test_agent rack-release \
    --image-layout "$WORK/pulled/operator" --image-layout "$WORK/pulled/launcher" \
    --launcher-image "$REGISTRY/lockstep/launcher" --image-map "lockstep/examples=$REPO"
  ok "agent up: nodes ${NODES[*]}, its store filled from the registry"
}


install_from_registry() {
  bash -c "${README_INSTALL[1]}" >"$WORK/helm.log" 2>&1 ||
    { cat "$WORK/helm.log" >&2; fail "the README's helm install failed: ${README_INSTALL[1]}"; }
  bash -c "${README_INSTALL[2]}" >"$WORK/rollout.log" 2>&1 ||
    { cat "$WORK/rollout.log" >&2; fail "the README's rollout check failed: ${README_INSTALL[2]}"; }
  wait_for 120 "two operator pods Running" two_operators_running
  local pod want="$REGISTRY/lockstep/operator@${DIGEST[lockstep/operator]}"
  for pod in $(operator_pods); do
    [[ "$(pod_field "$pod" '.spec.containers[0].image')" == "$want" ]] ||
      fail "$pod's image is $(pod_field "$pod" '.spec.containers[0].image'), not $want"
    [[ " ${NODES[*]} " == *" $(pod_field "$pod" .spec.nodeName) "* ]] || fail "$pod is not on an agent node"
    [[ "$(pod_field "$pod" '.status.containerStatuses[0].imageID')" == *"@${DIGEST[lockstep/operator]}" ]] ||
      fail "$pod runs $(pod_field "$pod" '.status.containerStatuses[0].imageID')"
  done
  wait_for 60 "an operator to lead" leads
  ok "README's helm install oci://$REGISTRY/charts/lockstep --version $VERSION and rollout status: $(operator_pods | tr '\n' ' ')Running $want; $(leader_pod) leads"
}

run_training_job() {
  apply_generic_job hello 'echo RELEASE_E2E_TRAINED'
  wait_for 120 "the TrainingJob to succeed (state: $(job_state hello))" job_is hello Succeeded
  local pod want="$REGISTRY/lockstep/launcher@${DIGEST[lockstep/launcher]}"
  for pod in hello-worker-0 hello-worker-1; do
    [[ "$(pod_field "$pod" '.spec.initContainers[0].image')" == "$want" ]] ||
      fail "$pod's init container image is $(pod_field "$pod" '.spec.initContainers[0].image')"
    [[ "$(pod_field "$pod" '.status.initContainerStatuses[0].containerID')" == runc://* ]] ||
      fail "$pod's init container did not run from the image store"
  done
  ok "TrainingJob Succeeded; both init containers ran $want"
}

# ---- 4. upgrade under a running job --------------------------------------------------------

start_long_job() {
  apply_generic_job long "while [ ! -e $TRIGGER/stop-long ]; do sleep 0.5; done; echo LONG_DONE"
  wait_for 120 "the long job to run" job_is long Running
  LONG_PODS="$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=long -o jsonpath='{.items[*].metadata.uid}')"
  ok "long job Running (pods $LONG_PODS)"
}

# Release N+1 with a new operator image (the same tree packed at another SOURCE_DATE_EPOCH),
# pulled into the agent's store, and `helm upgrade` to it from the registry.
upgrade_under_job() {
  local next; next="$(awk -F. '{print $1 "." $2 "." $3 + 1}' <<<"${VERSION%%-*}")"
  SOURCE_DATE_EPOCH=$(( $(git -C "$REPO" log -1 --format=%ct) + 1 )) "$REPO/hack/release.sh" "$next" \
    --registry "$REGISTRY" --build-dir "$BUILD" --no-build --out "$WORK/release-next" \
    >/dev/null 2>"$WORK/release-next.log" || { tail -20 "$WORK/release-next.log" >&2; fail "release $next"; }
  local new_digest; new_digest="$(awk '$1 ~ /operator:/ {print $2}' "$WORK/release-next/images/digests")"
  [[ -n "$new_digest" && "$new_digest" != "${DIGEST[lockstep/operator]}" ]] ||
    fail "release $next's operator image is not a new digest ($new_digest)"
  local name
  mkdir -p "$WORK/pulled-next"
  for name in operator launcher; do
    skopeo copy -q --preserve-digests "docker://$REGISTRY/lockstep/$name:$next" \
      "oci:$WORK/pulled-next/$name:$REGISTRY/lockstep/$name:$next" || fail "skopeo pull of $name:$next"
    "$BUILD/bin/lockstep-test-node-agent" --import-image "$WORK/pulled-next/$name" --state-dir "$STATE" \
      >>"$WORK/import.log" 2>&1 || { cat "$WORK/import.log" >&2; fail "import of $name:$next"; }
  done
  helm upgrade "$RELEASE" "oci://$REGISTRY/charts/lockstep" --version "$next" -n "$NS" \
    --set crds.install=false --set rbac.scope=namespace >"$WORK/upgrade.log" 2>&1 ||
    { cat "$WORK/upgrade.log" >&2; fail "helm upgrade to $next"; }
  # shellcheck disable=SC2329  # called through wait_for
  upgraded() {
    local pods pod; pods="$(operator_pods)"
    [[ "$(grep -c . <<<"$pods")" == 2 ]] || return 1
    for pod in $pods; do
      [[ "$(pod_field "$pod" '.status.containerStatuses[0].imageID')" == *"@$new_digest" ]] || return 1
    done
    leads
  }
  wait_for 180 "both operator pods on $next's image, one leading" upgraded
  local after; after="$(kubectl get tj long -n "$NS" -o jsonpath='{.status.state}/{.status.attempt}')"
  [[ "$after" == Running/0 || "$after" == Running/ ]] || fail "the long job after the upgrade: $after"
  [[ "$(kubectl get pods -n "$NS" -l lockstep.dev/job-name=long -o jsonpath='{.items[*].metadata.uid}')" == "$LONG_PODS" ]] ||
    fail "the long job's pods were replaced during the upgrade"
  touch "$TRIGGER/stop-long"
  wait_for 120 "the long job to succeed after the upgrade" job_is long Succeeded
  ok "helm upgrade $VERSION -> $next (operator @${new_digest:0:19}...) under a running job: same attempt and pods, Succeeded"
}

start_registry
readme_install
release
images_by_digest
chart_by_digest
pull_for_the_agent
start_agent
install_from_registry
run_training_job
start_long_job
upgrade_under_job
echo "release through an OCI registry: all checks passed ($((SECONDS - STARTED)) s)"
