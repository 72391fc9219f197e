#!/usr/bin/env bash
# Installs what a fresh Debian machine with Node lacks, idempotently: pnpm, redis-server, the
# test tools (Debian's prometheus for promtool, chromium for the browser tests, kubernetes-client
# for `kubectl kustomize` in the deploy tests, podman and its base images for the container
# tests; skipped with TICKFLEET_SETUP_TEST_TOOLS=0, as scripts/tickfleet does), then the
# workspace's dependencies. An existing kubectl is kept: the deploy tests need 1.22 or newer, and
# Debian 12's kubernetes-client is 1.20 (they say so).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
if [ "${TICKFLEET_SETUP_TEST_TOOLS:-1}" = 1 ]; then
  command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium fonts-liberation)
  command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
  # libfaketime: the venue-timeline test and the host scenarios (scripts/hosts) run processes with skewed clocks.
  compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || need_apt+=(libfaketime)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  echo "setup: installing ${need_apt[*]} with apt" >&2
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  # Debian starts the packaged services; tickfleet runs its own private instances.
  for svc in redis-server prometheus prometheus-node-exporter; do
    "${sudo_cmd[@]}" systemctl disable --now "$svc" >/dev/null 2>&1 || "${sudo_cmd[@]}" service "$svc" stop >/dev/null 2>&1 || true
  done
fi

# The container tests' engine and base images (podman, runc, debootstrap, containers.conf, a local
# Node base image cached in /var/cache/tickfleet): scripts/containers/setup.sh.
if [ "${TICKFLEET_SETUP_TEST_TOOLS:-1}" = 1 ]; then
  bash scripts/containers/setup.sh >/dev/null
fi

if ! command -v pnpm >/dev/null 2>&1; then
  echo "setup: installing pnpm@10 with npm" >&2
  npm i -g pnpm@10 >/dev/null
fi

if [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  pnpm install --frozen-lockfile --reporter=silent
fi
