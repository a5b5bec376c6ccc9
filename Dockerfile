# Dockerfile - refgate on Debian 12 (bookworm), three stages:
#   build    compiles refgate-server and refgate-cli (the -dev packages of
#            scripts/deps.sh that these two need; keep the lists in step)
#   nginx    Debian's nginx 1.22, the same nginx `make run` and the tests use;
#            its configuration is mounted (docker-compose.yml)
#   gateway  (the default) one refgate-server worker: the binaries, Chromium
#            and the runtime libraries, run as the user refgate
# docker-compose.yml builds and wires them: `docker compose up --build`.

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        gcc make libc6-dev pkg-config \
        libfcgi-dev libwebsockets-dev libmsgpack-dev libhiredis-dev \
        libxxhash-dev libcjson-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make build/refgate-server build/refgate-cli

FROM debian:bookworm-slim AS nginx
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx \
 && rm -rf /var/lib/apt/lists/*
# Graceful: in-flight requests finish (worker_shutdown_timeout caps it).
STOPSIGNAL SIGQUIT
CMD ["nginx", "-c", "/etc/refgate-nginx/nginx.conf", "-e", "stderr"]

FROM debian:bookworm-slim AS gateway
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        chromium fonts-liberation ca-certificates \
        libfcgi0ldbl libwebsockets17 libhiredis0.14 libmsgpackc2 libxxhash0 \
        libcjson1 libssl3 \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --user-group --create-home --home-dir /var/lib/refgate refgate
COPY --from=build /src/build/refgate-server /src/build/refgate-cli /usr/local/bin/
# Chromium runs with --no-sandbox (the pool's flags): the container is its
# sandbox, and the worker is not root inside it.
USER refgate
ENV REFGATE_RUN_DIR=/var/lib/refgate/run \
    REFGATE_CHROMIUM=/usr/lib/chromium/chromium
EXPOSE 9000 9001
# SIGTERM: the worker parks its sessions into Redis, then exits 0.
STOPSIGNAL SIGTERM
CMD ["refgate-server"]
