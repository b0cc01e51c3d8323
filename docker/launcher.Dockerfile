# syntax=docker/dockerfile:1
# lockstep-launcher image: holds only /lockstep-launcher and a static `cp`. The operator's init
# container runs `cp /lockstep-launcher /lockstep/bin/lockstep-launcher` from it
# (operator/api/children.h); the launcher itself runs inside the user's training image.
#   docker build -f docker/launcher.Dockerfile -t lockstep/launcher:0.1.0 .
# hack/build-images.sh builds the same image without Docker (same docker/stage-rootfs.sh).

FROM debian:12 AS builder
# The build packages of hack/setup.sh (tests/unit/helm/dockerfiles_test.sh keeps them a subset);
# busybox-static is one statically linked file that acts as `cp` under that name.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config git ca-certificates \
      libcurl4-openssl-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev \
      libgtest-dev libgmock-dev busybox-static \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG SOURCE_DATE_EPOCH=0
RUN --mount=type=cache,target=/root/.cache/ccache \
    CCACHE_DIR=/root/.cache/ccache docker/build-in-image.sh --out /out --target launcher \
 && docker/stage-rootfs.sh --image launcher --bin /out --out /rootfs

FROM scratch
COPY --from=builder /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/bin/cp"]
CMD ["--help"]
