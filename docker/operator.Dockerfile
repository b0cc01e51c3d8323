# syntax=docker/dockerfile:1
# lockstep-operator image. Build from the repository root:
#   docker build -f docker/operator.Dockerfile -t lockstep/operator:0.1.0 .
# The builder stage runs docker/build-in-image.sh, which the test suite also runs outside Docker.

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
RUN --mount=type=cache,target=/root/.cache/ccache \
    CCACHE_DIR=/root/.cache/ccache docker/build-in-image.sh --out /out --target operator

FROM debian:12-slim
# Exactly the shared libraries lockstep-operator links (the build test checks the binary's
# NEEDED entries against this list), plus the CA bundle for kubeconfigs that name none.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libssl3 libyaml-cpp0.7 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=builder --chmod=0555 /out/lockstep-operator /lockstep-operator
# The nonroot uid the chart's securityContext runs as (runAsUser 65532).
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/lockstep-operator"]
