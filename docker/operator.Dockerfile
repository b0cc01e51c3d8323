# syntax=docker/dockerfile:1
# lockstep-operator image. Build from the repository root:
#   docker build -f docker/operator.Dockerfile -t lockstep/operator:0.1.0 .
# The builder stage runs docker/build-in-image.sh and docker/stage-rootfs.sh, which
# hack/build-images.sh also runs to build this image without Docker: both ship the same files at
# the same paths and start the same way (tests/unit/helm/dockerfiles_test.sh compares them).

FROM debian:12 AS builder
# The build packages of hack/setup.sh (tests/unit/helm/dockerfiles_test.sh keeps them a subset).
# Debian 12's archive is the pin: package versions follow the base image's point release.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config git ca-certificates \
      libcurl4-openssl-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev \
      libgtest-dev libgmock-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Timestamps of the staged files (BuildKit passes SOURCE_DATE_EPOCH when it is set).
ARG SOURCE_DATE_EPOCH=0
# The root filesystem: the binary, exactly the shared libraries it loads, the CA bundle, passwd.
RUN --mount=type=cache,target=/root/.cache/ccache \
    CCACHE_DIR=/root/.cache/ccache docker/build-in-image.sh --out /out --target operator \
 && docker/stage-rootfs.sh --image operator --bin /out --out /rootfs

# No base image: nothing but what /rootfs holds (no shell, no package manager).
FROM scratch
COPY --from=builder /rootfs/ /
# The nonroot uid the chart's securityContext runs as (runAsUser 65532).
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/lockstep-operator"]
