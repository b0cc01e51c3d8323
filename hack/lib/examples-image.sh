# The training images the examples run in on real nodes (hack/build-images.sh --examples F):
# lockstep/examples-<F> holds Debian 12's Python 3.11 (the interpreter, its standard library and
# every shared library they and the framework's wheels load, copied from this machine as
# docker/stage-rootfs.sh copies the operator's), the framework's wheels from PyPI
# (hack/requirements-examples-<F>.txt) and the examples' scripts at /examples/frameworks. No base
# image is pulled: none is reachable here.
#
# One image per framework, because a training image is what a node pulls before a pod starts: the
# JAX one is ~0.5 GB; PyTorch's wheels from PyPI bring 3 GB of CUDA libraries and 1 GB of triton
# with them (the CPU wheels are not on PyPI): lockstep/examples-pytorch is ~5.4 GB unpacked.
#
# Packed as an OCI layout with one uncompressed layer (examples_pack_layout), the unpacked root
# filesystem kept beside it (<layout>.rootfs): gzip, as umoci packs, cost 3.5 min for JAX's
# 661 MB on a loaded 2-core machine and would cost ~30 min for PyTorch's, and the kubelet nodes
# load the image from the unpacked tree (hack/lib/cluster-kubelet.sh, kubelet_import).
# shellcheck shell=bash

EXAMPLES_FRAMEWORKS=(jax pytorch)
EXAMPLES_PYTHON=/usr/bin/python3.11
EXAMPLES_STDLIB=/usr/lib/python3.11
EXAMPLES_SITE=/usr/local/lib/python3.11/dist-packages
# manylinux tags Debian 12's glibc (2.36) runs (PyTorch's nccl wheel is manylinux_2_18 only).
EXAMPLES_PLATFORMS=(manylinux2014_x86_64 $(for v in $(seq 17 36); do printf 'manylinux_2_%s_x86_64 ' "$v"; done))

# examples_site_dir FRAMEWORK: the cached directory for the framework's wheels installed for the
# image's Python, named by a hash of its recipe (the requirements file, the platforms, pip's
# version, examples_site_packages).
examples_site_dir() {
  local reqs="$REPO_ROOT/hack/requirements-examples-$1.txt"
  [[ -f "$reqs" ]] || die "no $reqs (frameworks with an examples image: ${EXAMPLES_FRAMEWORKS[*]})"
  local key; key="$({ cat "$reqs"; declare -f examples_site_packages; echo "${EXAMPLES_PLATFORMS[*]}"
    python3 -m pip --version | cut -d' ' -f1-2; } | sha256sum | cut -c1-16)"
  echo "$LOCKSTEP_CACHE/image-sites/$1-$key"
}

# examples_site_packages FRAMEWORK: prints examples_site_dir, installing the wheels there first
# (under a lock, completed by a marker) when it has none. hack/build-images.sh removes it once
# the image is packed: the image's cached root filesystem holds the same files.
examples_site_packages() {
  local fw="$1" reqs="$REPO_ROOT/hack/requirements-examples-$1.txt" dir
  dir="$(examples_site_dir "$fw")"
  if [[ ! -f "$dir/.lockstep-complete" ]]; then
    mkdir -p "$(dirname "$dir")"
    (
      exec 9>"$dir.lock"; flock 9
      [[ -f "$dir/.lockstep-complete" ]] && exit 0
      rm -rf "$dir"
      local platforms=() p
      for p in "${EXAMPLES_PLATFORMS[@]}"; do platforms+=(--platform "$p"); done
      log "installing $fw's wheels for the examples image into $dir"
      python3 -m pip install -q --disable-pip-version-check --cache-dir "$LOCKSTEP_CACHE/pip" \
        --target "$dir" --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
        "${platforms[@]}" -r "$reqs" >&2
      # Console scripts carry this machine's interpreter path; the image runs modules by name.
      rm -rf "$dir/bin"
      date -u +%FT%TZ >"$dir/.lockstep-complete"
    ) || die "installing $fw's wheels for the examples image failed"
  fi
  echo "$dir"
}

# stage_examples_rootfs FRAMEWORK OUT: the image's root filesystem in OUT.
stage_examples_rootfs() {
  local fw="$1" out="$2" site
  site="$(examples_site_packages "$fw")"
  [[ -x "$EXAMPLES_PYTHON" ]] || die "$EXAMPLES_PYTHON is missing (hack/setup.sh installs python3)"
  install -D -m 0755 "$EXAMPLES_PYTHON" "$out/usr/bin/python3.11"
  ln -s python3.11 "$out/usr/bin/python3"
  ln -s python3.11 "$out/usr/bin/python"
  mkdir -p "$out$EXAMPLES_STDLIB" "$out$EXAMPLES_SITE"
  # The standard library without its tests, IDLE and Tk (which would pull in X11).
  tar -C "$EXAMPLES_STDLIB" --exclude=./test --exclude=./idlelib --exclude=./tkinter \
    --exclude=./turtledemo --exclude='./lib-dynload/_tkinter*' --exclude=__pycache__ \
    --exclude=./dist-packages -cf - . | tar -C "$out$EXAMPLES_STDLIB" -xf -
  cp -a "$site/." "$out$EXAMPLES_SITE/"
  rm -f "$out$EXAMPLES_SITE/.lockstep-complete"
  mkdir -p "$out/examples"
  cp -a "$REPO_ROOT/examples/frameworks" "$out/examples/frameworks"
  find "$out/examples" -name __pycache__ -prune -exec rm -rf {} +
  examples_shared_libraries "$out"
  mkdir -p "$out/etc" "$out/tmp" "$out/home/nonroot"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
    >"$out/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$out/etc/group"
  printf 'hosts: files dns\n' >"$out/etc/nsswitch.conf"
  chown -R 0:0 "$out"
  chown 65532:65532 "$out/home/nonroot"
  find "$out" -type d -exec chmod 0755 {} +
  chmod 1777 "$out/tmp"
  find "$out" -exec touch -h -d "@${SOURCE_DATE_EPOCH:-0}" {} +
}

# examples_shared_libraries OUT: every shared library an ELF file in OUT loads from this machine
# (not those the wheels bundle, which ldd resolves inside OUT), at the path the loader finds it.
examples_shared_libraries() {
  local out="$1" lib
  find "$out" -type f \( -name '*.so' -o -name '*.so.*' -o -path "$out/usr/bin/*" \) -print0 |
    xargs -0 -r -n 64 ldd 2>/dev/null |
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/lib/ {print $1}' | sort -u |
    while read -r lib; do
      [[ "$lib" == "$out"/* ]] && continue
      [[ -e "$out$lib" ]] || install -D -m 0644 "$(readlink -f "$lib")" "$out$lib"
    done
  chmod 0755 "$out"/lib64/ld-linux-x86-64.so.2 2>/dev/null || true
}

# examples_pack_layout ROOTFS LAYOUT REF CREATED CREATED_BY USER CMD...: an OCI image layout in
# LAYOUT (which must not exist) holding ROOTFS as one uncompressed layer (GNU tar, names sorted,
# numeric owners: the staged tree's fixed times and modes make it reproducible), its
# configuration and manifest, tagged REF. The index also names the image as containerd names an
# imported one (io.containerd.image.name), so `ctr images import` keeps that name.
examples_pack_layout() {
  python3 - "$@" <<'PY'
import hashlib, json, os, subprocess, sys
rootfs, layout, ref, created, created_by, user, *cmd = sys.argv[1:]
blobs = os.path.join(layout, "blobs", "sha256")
os.makedirs(blobs)
tar = subprocess.Popen(["tar", "-C", rootfs, "--sort=name", "--format=gnu", "--numeric-owner",
                        "-cf", "-", "."], stdout=subprocess.PIPE)
digest, size, partial = hashlib.sha256(), 0, os.path.join(blobs, ".layer.partial")
with open(partial, "wb") as out:
    for chunk in iter(lambda: tar.stdout.read(1 << 20), b""):
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
if tar.wait() != 0:
    sys.exit(f"tar of {rootfs} failed")
layer = "sha256:" + digest.hexdigest()
os.rename(partial, os.path.join(blobs, digest.hexdigest()))

def put(media_type, obj):
    data = json.dumps(obj, separators=(",", ":")).encode()
    hexdigest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, hexdigest), "wb") as out:
        out.write(data)
    return {"mediaType": media_type, "digest": "sha256:" + hexdigest, "size": len(data)}

config = put("application/vnd.oci.image.config.v1+json", {
    "created": created, "architecture": "amd64", "os": "linux",
    "config": {"User": user, "Cmd": cmd},
    "rootfs": {"type": "layers", "diff_ids": [layer]},
    "history": [{"created": created, "created_by": created_by}]})
manifest = put("application/vnd.oci.image.manifest.v1+json", {
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": config,
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": size}]})
manifest["annotations"] = {"org.opencontainers.image.ref.name": ref,
                           "io.containerd.image.name": "docker.io/" + ref}
with open(os.path.join(layout, "index.json"), "w") as out:
    json.dump({"schemaVersion": 2, "manifests": [manifest]}, out, separators=(",", ":"))
with open(os.path.join(layout, "oci-layout"), "w") as out:
    json.dump({"imageLayoutVersion": "1.0.0"}, out)
PY
}
