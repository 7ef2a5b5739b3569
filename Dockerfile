# Agent Kourier: the image the Helm chart runs (`agentkourier controller`).
#
# Three stages on the official Node 24 image: `build` compiles dist/ with the dev dependencies,
# `production-dependencies` installs only `dependencies`, and the last stage ships those two and
# package.json, nothing else. It runs as a numeric non-root user on a read-only root file system:
# the only writable paths are the volumes below (the chart mounts them).
#
# Without Docker, `npm run image-tree` builds the same tree from this file (scripts/image-tree.ts
# reads it) and runs it as a non-root user on a read-only copy. Keep to what that script knows:
# FROM, ARG, WORKDIR, COPY (named paths, --from, --chown), RUN (relative paths, build stages
# only), ENV, USER, VOLUME, EXPOSE, LABEL, ENTRYPOINT, CMD.
#
#   docker build -t agentkourier:dev .
#   docker run --read-only -v ak-state:/var/lib/agentkourier --tmpfs /tmp agentkourier:dev controller --help

ARG NODE_IMAGE=docker.io/library/node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build-webchat.ts ./scripts/
COPY src ./src
RUN npm run build && mkdir -p empty-dir

FROM ${NODE_IMAGE} AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="agentkourier" \
      org.opencontainers.image.description="Kubernetes operator and chat-to-agent broker: Slack threads as A2A sessions" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
# At most two malloc arenas. glibc gives each thread that allocates its own arena (the event
# loop, libuv's pool, V8's helper threads), and what the threads free stays resident in them:
# with the default, a held streaming session read 33-100 KiB resident (median 70) in the memory
# benchmark, with two arenas 27-55 (median 34), the heap part (24 KiB) alike, for a few percent
# of CPU at most (docs/performance.md).
# The chart's extraEnv can set it otherwise.
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /build/dist ./dist
COPY package.json ./
# The state directory (SQLite) belongs to the runtime user, so a fresh volume mounted there is
# writable (Docker copies the ownership into an empty named volume; the chart sets fsGroup).
COPY --from=build --chown=1000:1000 /build/empty-dir /var/lib/agentkourier
# The official image's `node` user, by number: runAsNonRoot can check a number, not a name.
USER 1000:1000
VOLUME ["/var/lib/agentkourier", "/tmp"]
# 8080: Slack's events (POST /slack/events). 9090: /healthz, /readyz, /metrics.
EXPOSE 8080 9090
# Exec form: node is PID 1 and gets SIGTERM itself (the controller drains on it).
ENTRYPOINT ["node", "/app/dist/main.js"]
CMD ["controller"]
