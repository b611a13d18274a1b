# syntax=docker/dockerfile:1
# The coach-operator image (the Helm chart's ghcr.io/coach/coach-operator), for machines with Docker:
#
#   docker build --build-arg REVISION=$(git rev-parse HEAD) -t ghcr.io/coach/coach-operator:0.1.0 .
#
# NOT BUILT OR TESTED IN THIS REPOSITORY: coach's development and CI machines have no container engine.
# There, tools/image/build writes the same image as a reproducible OCI archive, without Docker, and
# tools/suites/image.sh tests it (digest, layout, and its binaries run from the unpacked layer). This
# file runs that very builder in a Debian bookworm stage and copies the root filesystem it assembles
# (tools/image/build --layer-tar) into an empty image, so both ways give the same files: coach-operator,
# coach-launch and coach-replica-shim in /usr/local/bin, their shared libraries and the loader at their
# Debian paths, /etc/passwd and /etc/group with nonroot 65532:65532, /etc/nsswitch.conf, the CA bundle
# /etc/ssl/certs/ca-certificates.crt, /tmp 1777; user 65532:65532, entrypoint coach-operator. Keep the
# final stage's config below in step with tools/image/assemble.py. (The image digest differs from the
# archive's: Docker writes its own config and layer metadata.)

# VERSION: the chart's appVersion (charts/coach/Chart.yaml; tools/suites/image.sh checks they agree).
ARG VERSION=0.1.0
ARG REVISION=unknown

FROM debian:bookworm AS build
# tools/bootstrap installs every package the build (and the test suites) need: Debian's Bazel and
# libraries, plus test-only ones (PyTorch, an MLflow virtualenv); they stay in this stage.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY tools/bootstrap tools/mlflow_env.sh tools/
RUN tools/bootstrap
COPY . .
ARG VERSION
ARG REVISION
ARG SOURCE_DATE_EPOCH=0
RUN --mount=type=cache,target=/root/.cache/bazel \
    tools/image/build --tag "$VERSION" --revision "$REVISION" \
      --out /out/coach-operator-image.tar --layer-tar /out/layer.tar \
 && bazel shutdown \
 && mkdir /rootfs \
 && tar -xpf /out/layer.tar --numeric-owner -C /rootfs

FROM scratch
# COPY --from keeps the owners and modes of the build stage (/home/nonroot is 65532's, /tmp is 1777).
COPY --from=build /rootfs/ /
ARG VERSION
ARG REVISION
LABEL org.opencontainers.image.source="https://github.com/coach/coach" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.title="coach-operator"
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /
USER 65532:65532
EXPOSE 7450 7451
ENTRYPOINT ["/usr/local/bin/coach-operator"]
