# qrtag's container image (see deploy/README.md; deploy/compose.yaml builds
# it). Not built in CI: the development machines reach no image registry.
#
#   docker build -t qrtag .

# The toolchain Cargo.toml's rust-version names (tests/deploy_kit.rs checks).
ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
# Cargo.toml names the benchmarks, so their files must be there to build.
COPY Cargo.toml Cargo.lock ./
COPY assets assets
COPY benches benches
COPY src src
RUN cargo build --release --locked --bin qrtag \
 && cp target/release/qrtag /usr/local/bin/qrtag

FROM debian:bookworm-slim
# ca-certificates for a CouchDB behind https; curl for the health check.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
# A fixed UID, so files on volumes keep their owner across rebuilds. The two
# directories exist in the image, so new named volumes mounted on them start
# out owned by qrtag.
RUN useradd --system --uid 10001 --user-group --no-create-home \
        --home-dir /var/lib/qrtag --shell /usr/sbin/nologin qrtag \
 && install -d -o qrtag -g qrtag -m 0750 /var/lib/qrtag /var/log/qrtag
COPY --from=build /usr/local/bin/qrtag /usr/local/bin/qrtag
USER qrtag
WORKDIR /var/lib/qrtag
# The public listener on every interface of the container; the admin one
# (/healthz, /readyz, QR codes) on the container's loopback only, where the
# health check reaches it and nothing outside can.
ENV QRTAG_LISTEN=0.0.0.0:8080 \
    QRTAG_ADMIN_LISTEN=127.0.0.1:8081 \
    QRTAG_DB=/var/lib/qrtag/qrtag.db \
    QRTAG_ACCESS_LOG=/var/log/qrtag/access.log
EXPOSE 8080
# 503 until the links are loaded, 200 while serving (also degraded).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
    CMD curl -fsS -o /dev/null http://127.0.0.1:8081/readyz || exit 1
# SIGTERM drains the access log; give it the time the unit gives it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["qrtag"]
CMD ["serve"]
