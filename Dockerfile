# syntax=docker/dockerfile:1
# transerve's images (deploy/README.md). Both build with the README's own steps: scripts/setup.sh
# installs the toolchain and libraries, then the same CMake build; the runtime stages get only the
# binaries, the default model and the shared libraries those binaries load.
#
#   docker build -t transerve:latest .                            # CPU, debian:bookworm-slim
#   docker build --target runtime-cuda -t transerve:cuda .        # CUDA 13 (NVIDIA base images)
#
# Build arguments: MARCH (x86-64-v3: AVX2 + FMA, the floor the binaries need; the image must run
# on CPUs other than the builder's, so no -march=native. The weight-product kernels for AVX-512,
# VNNI and BF16 are compiled in beside the AVX2 ones whatever MARCH is, and the CPU's best is
# chosen at run time: docs/engine.md, "Instruction-set levels"), the base images below,
# CUDA_ARCHITECTURES.
ARG DEBIAN_IMAGE=debian:bookworm
ARG DEBIAN_SLIM_IMAGE=debian:bookworm-slim
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:13.0.0-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:13.0.0-runtime-ubuntu24.04

# ---- build (CPU) -------------------------------------------------------------------------------
FROM ${DEBIAN_IMAGE} AS build
ARG MARCH=x86-64-v3
WORKDIR /src
# setup.sh first, alone: the package layer is cached until setup.sh itself changes.
COPY scripts/setup.sh scripts/setup.sh
RUN ./scripts/setup.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRANSERVE_CUDA=OFF \
      -DTRANSERVE_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=${MARCH}" \
 && cmake --build build --target transerve-server transerve-client transerve-loadgen \
 && deploy/docker/stage.sh build /opt/transerve

# ---- build (CUDA) ------------------------------------------------------------------------------
FROM ${CUDA_DEVEL_IMAGE} AS build-cuda
ARG MARCH=x86-64-v3
ARG CUDA_ARCHITECTURES=80-real;90
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
RUN ./scripts/setup.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
# The CUDA base image provides cuBLAS at run time: stage.sh does not look for its package.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRANSERVE_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
      -DTRANSERVE_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=${MARCH}" \
 && cmake --build build --target transerve-server transerve-client transerve-loadgen \
      transerve_cuda \
 && RUNTIME_PACKAGES_PROVIDED=/usr/local/cuda deploy/docker/stage.sh build /opt/transerve

# ---- runtime (CUDA) ----------------------------------------------------------------------------
FROM ${CUDA_RUNTIME_IMAGE} AS runtime-cuda
COPY --from=build-cuda /opt/transerve /opt/transerve
COPY deploy/docker/install-runtime.sh /opt/transerve/install-runtime.sh
RUN /opt/transerve/install-runtime.sh /opt/transerve
USER 10001:10001
ENV PATH=/opt/transerve/bin:$PATH \
    TRANSERVE_MODEL_DIR=/opt/transerve/models/en-de-small \
    TRANSERVE_PORT=50051 \
    TRANSERVE_METRICS_PORT=9464 \
    TRANSERVE_HTTP_PORT=5000 \
    TRANSERVE_DEVICE=cuda
# gRPC, Prometheus /metrics, HTTP (LibreTranslate's API, /v1 JSON, the web page).
EXPOSE 50051 9464 5000
# Loading and warming up the model takes seconds; the gRPC health service says SERVING after.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD transerve-client --target="127.0.0.1:${TRANSERVE_PORT}" --health --timeout=4 || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["transerve-server"]

# ---- runtime (CPU; the default target, so it comes last) ---------------------------------------
FROM ${DEBIAN_SLIM_IMAGE} AS runtime
COPY --from=build /opt/transerve /opt/transerve
COPY deploy/docker/install-runtime.sh /opt/transerve/install-runtime.sh
RUN /opt/transerve/install-runtime.sh /opt/transerve
USER 10001:10001
ENV PATH=/opt/transerve/bin:$PATH \
    TRANSERVE_MODEL_DIR=/opt/transerve/models/en-de-small \
    TRANSERVE_PORT=50051 \
    TRANSERVE_METRICS_PORT=9464 \
    TRANSERVE_HTTP_PORT=5000
# gRPC, Prometheus /metrics, HTTP (LibreTranslate's API, /v1 JSON, the web page).
EXPOSE 50051 9464 5000
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD transerve-client --target="127.0.0.1:${TRANSERVE_PORT}" --health --timeout=4 || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["transerve-server"]
