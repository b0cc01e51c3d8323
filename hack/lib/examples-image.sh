# The training images the examples run in on real nodes (hack/build-images.sh --examples F):
# lockstep/examples-<F> holds Debian 12's Python 3.11 (the interpreter, its standard library and
# every shared library they and the framework's wheels load, copied from this machine as
# docker/stage-rootfs.sh copies the operator's), the framework's wheels from PyPI
# (hack/requirements-examples-<F>.txt) and the examples' scripts at /examples/frameworks. No base
# image is pulled: none is reachable here.
#
# One image per framework, because a training image is what a node pulls before a pod starts: the
# JAX one is ~0.5 GB; PyTorch's wheels from PyPI bring 3 GB of CUDA libraries with them (the CPU
# wheels are not on PyPI), which every node would unpack.
# shellcheck shell=bash

EXAMPLES_FRAMEWORKS=(jax)
EXAMPLES_PYTHON=/usr/bin/python3.11
EXAMPLES_STDLIB=/usr/lib/python3.11
EXAMPLES_SITE=/usr/local/lib/python3.11/dist-packages
# manylinux tags Debian 12's glibc (2.36) runs.
EXAMPLES_PLATFORMS=(manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64)

# examples_site_packages FRAMEWORK: prints the cached directory holding the framework's wheels
# installed for the image's Python, building it (under a lock, completed by a marker) when its
# recipe (the requirements file, this function, pip's version) has none yet.
examples_site_packages() {
  local fw="$1" reqs="$REPO_ROOT/hack/requirements-examples-$1.txt"
  [[ -f "$reqs" ]] || die "no $reqs (frameworks with an examples image: ${EXAMPLES_FRAMEWORKS[*]})"
  local key; key="$({ cat "$reqs"; declare -f examples_site_packages; echo "${EXAMPLES_PLATFORMS[*]}"
    python3 -m pip --version | cut -d' ' -f1-2; } | sha256sum | cut -c1-16)"
  local dir="$LOCKSTEP_CACHE/image-sites/$fw-$key"
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
