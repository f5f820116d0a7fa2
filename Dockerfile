# syntax=docker/dockerfile:1
#
# Herald's images (BuildKit):
#
#   docker build -t herald:0.1.0 .                            # the daemon (default target)
#   docker build --target plugins -t herald-plugins:0.1.0 .   # the example plugins
#
# deploy/30-deployment.yaml runs the first and copies the .wasm files of the
# second into the pod's plugin directory with an init container.

ARG RUST_VERSION=1.95

# ---- build: the host (release) and the example plugins (wasm32-wasip2) ----
# Debian 12 (bookworm), the same glibc as the distroless runtime below.
FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
RUN rustup target add wasm32-wasip2
WORKDIR /src
COPY . .
# The target directory is a cache mount, so results are copied out in the
# same step. --locked: exactly the versions in Cargo.lock.
# --no-default-features: without the embedded API server and `herald demo`,
# which a deployment never uses (host/Cargo.toml, feature `embedded`).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p herald --no-default-features \
    && install -D -m 0755 target/release/herald /out/herald
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cd plugins \
    && cargo build --release --locked --target wasm32-wasip2 \
         --target-dir /src/target/wasm \
         -p pod-lifecycle -p image-policy -p rollout-watch \
    && mkdir -p /out/plugins \
    && cp /src/target/wasm/wasm32-wasip2/release/pod_lifecycle.wasm \
          /src/target/wasm/wasm32-wasip2/release/image_policy.wasm \
          /src/target/wasm/wasm32-wasip2/release/rollout_watch.wasm \
          /out/plugins/

# ---- plugins: the .wasm files, and the `cp` the init container runs ----
# As a Kubernetes image volume instead, mount this image and point pluginDir
# at its /plugins (deploy/README.md).
FROM docker.io/library/busybox:1.37 AS plugins
COPY --from=build /out/plugins/ /plugins/
USER 65532:65532

# ---- runtime: the daemon, as a non-root user, nothing else ----
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
COPY --from=build /out/herald /usr/local/bin/herald
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["run", "--config", "/etc/herald/herald.yaml"]
