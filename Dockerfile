# syntax=docker/dockerfile:1.7
# Every service's image, from the repository root; SERVICE names the service, PORT its listening port:
#   docker build --build-arg SERVICE=auth --build-arg PORT=8081 -t ai-platform/auth .
# (docker-compose.yml passes both for each service.) Services: edge 8080, auth 8081, llm-quota 8082,
# legacy-agent 8083, llm-gateway 8084, standalone 8080 (the whole platform as `pnpm start` runs it; one replica only).
ARG NODE_VERSION=20
ARG PNPM_VERSION=10.34.9

# deps: every package the lockfile names, fetched into pnpm's store; cached until the lockfile changes
FROM node:${NODE_VERSION}-slim AS deps
ARG PNPM_VERSION
ENV PNPM_HOME=/pnpm CI=true
ENV PATH=${PNPM_HOME}:${PATH}
RUN npm install --global pnpm@${PNPM_VERSION}
WORKDIR /repo
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm fetch

# workspace: the sources and the whole workspace installed from the store; the same layer for every service
FROM deps AS workspace
COPY . .
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm install --frozen-lockfile --offline

# build: the service's bundle and only the packages it loads (see scripts/build/deploy.ts)
FROM workspace AS build
ARG SERVICE
ARG PORT
RUN test -n "${SERVICE}" && test -n "${PORT}" \
 || { echo 'build with --build-arg SERVICE=<service> --build-arg PORT=<its port>' >&2; exit 1; }
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm build "${SERVICE}" --deploy /deploy

# runtime: node, the bundle and its production node_modules; no pnpm, no sources, no dev dependencies
FROM node:${NODE_VERSION}-slim AS runtime
# /data: the embedded store's default DATA_DIR, the only folder the service's user owns (same layer for all)
RUN mkdir -p /data && chown 1000:1000 /data
# MALLOC_ARENA_MAX=2: glibc's per-thread arenas (zlib and crypto work on libuv's threads) kept ~20 MB
# of freed native memory resident per process under load (decision 0077); fixed 128 KiB mmap and trim
# thresholds: glibc's raised ones kept freed large blocks resident, ~20-25 MiB per process (decision 0085).
# pnpm start gives its children the same (services/standalone/src/service-process.ts).
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072 \
    DATA_DIR=/data
WORKDIR /app
# Owned by root and read-only for the service: the code cannot be changed by the process running it.
COPY --from=build /deploy ./
ARG PORT
ENV PORT=${PORT} ADMIN_PORT=9464
EXPOSE ${PORT}
# the image's `node` user, numerically so that Kubernetes' runAsNonRoot can verify it
USER 1000:1000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ADMIN_PORT ?? 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
