# syntax=docker/dockerfile:1
# lockstep-launcher image: holds only /lockstep-launcher and a static `cp`. The operator's init
# container runs `cp /lockstep-launcher /lockstep/bin/lockstep-launcher` from it
# (operator/api/children.h); the launcher itself runs inside the user's training image.
#   docker build -f docker/launcher.Dockerfile -t lockstep/launcher:0.1.0 .

FROM debian:12 AS builder
# The build packages of hack/setup.sh (tests/unit/helm/dockerfiles_test.sh keeps them a subset).
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config git ca-certificates \
      libcurl4-openssl-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev \
      libgtest-dev libgmock-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/root/.cache/ccache \
    CCACHE_DIR=/root/.cache/ccache docker/build-in-image.sh --out /out --target launcher

# busybox-static is one statically linked file; under the name `cp` it acts as cp.
FROM debian:12-slim AS tools
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox-static \
 && rm -rf /var/lib/apt/lists/*

FROM scratch
COPY --from=tools --chmod=0555 /bin/busybox /bin/cp
COPY --from=builder --chmod=0555 /out/lockstep-launcher /lockstep-launcher
USER 65532:65532
ENTRYPOINT ["/bin/cp"]
CMD ["--help"]
