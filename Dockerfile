# syntax=docker/dockerfile:1.7
# One image for every tickfleet role; the entrypoint is the `tickfleet` CLI and the role is the
# first argument:  tickfleet worker | tickfleet scheduler | tickfleet dashboard --port 3000.
# The sources run from the CLI's esbuild bundle of them, built at the end of the build stage
# (apps/cli/bin/cli-bundle.mjs); the runtime stage only reads it.
#
#   docker build -t tickfleet:0.1.0 .
#   docker run --rm -e REDIS_URL=redis://redis:6379 tickfleet:0.1.0 worker
# Without a registry (podman and a local base image): scripts/containers/build.sh.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: the production dependencies from the lockfile, compiled, and the CLI bundle -------
FROM ${NODE_IMAGE} AS build
ENV PNPM_HOME=/pnpm \
    PATH=/pnpm:$PATH \
    CI=true
# better-sqlite3 compiles from source when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
# pnpm 10, exactly the version package.json's packageManager pins (pnpm would fetch it otherwise).
RUN npm install -g "pnpm@$(node -p "require('./package.json').packageManager.split('@')[1]")" && pnpm --version
# The lockfile alone decides what is fetched, so this layer stays cached until it changes.
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm fetch --prod --store-dir /pnpm/store
COPY . .
# Production dependencies only: the roles run from the bundle, which needs none of the dev tools
# (the store's side-effects cache keeps better-sqlite3's compiled binding between builds).
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile --prod --offline --store-dir /pnpm/store
# Fail the build, not the pod, if the CLI cannot load: build the bundle (every import of every
# command resolved), start the CLI from it, and open a SQLite store through the compiled binding.
RUN TICKFLEET_CLI_BUNDLE=1 node apps/cli/bin/tickfleet.mjs --help >/dev/null \
 && TICKFLEET_CLI_BUNDLE=1 TICKFLEET_STORE_URL=sqlite:///tmp/check.db node apps/cli/bin/tickfleet.mjs connectors list >/dev/null \
 && rm -f /tmp/check.db*

# ---- runtime ----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    TICKFLEET_CLI_BUNDLE=1 \
    TICKFLEET_SPOOL_DIR=/var/lib/tickfleet/spool \
    TICKFLEET_HEALTH_HOST=0.0.0.0 \
    TICKFLEET_DASHBOARD_HOST=0.0.0.0
RUN groupadd --gid 10001 tickfleet \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/tickfleet --no-create-home --shell /usr/sbin/nologin tickfleet \
 && mkdir -p /var/lib/tickfleet/spool \
 && chown -R 10001:10001 /var/lib/tickfleet
# Application files stay owned by root: the process cannot modify its own code.
COPY --from=build /app /app
# The working directory is where relative defaults (.tickfleet/ for SQLite in `tickfleet up`) land.
WORKDIR /var/lib/tickfleet
USER 10001:10001
# Workers' outage spool: mount a volume here so a restarted container replays it.
VOLUME ["/var/lib/tickfleet/spool"]
# 9464: worker/scheduler /metrics /healthz /readyz (TICKFLEET_HEALTH_PORT); 3000: dashboard.
EXPOSE 9464 3000
ENTRYPOINT ["node", "/app/apps/cli/bin/tickfleet.mjs"]
CMD ["--help"]
