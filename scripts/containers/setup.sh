#!/usr/bin/env bash
# Makes this machine build and run tickfleet's image without a Docker engine or a registry,
# idempotently: installs podman, runc and debootstrap with apt if missing, sets the three
# containers.conf keys this kind of machine needs (other settings are kept), and makes the
# base image the Dockerfile's NODE_IMAGE takes: a `debootstrap --variant=minbase bookworm`
# root filesystem plus this machine's Node, npm, Node headers and CA bundle, imported with
# `podman import`. The root filesystem is cached as a tarball in TICKFLEET_CONTAINER_CACHE
# (/var/cache/tickfleet), outside any clone, and the image is reused while it exists.
# Also makes localhost/tickfleet-redis (the same root filesystem plus Debian's redis-server) for
# the container tests. Prints the base image's name on stdout (all else goes to stderr).
set -euo pipefail

CACHE=${TICKFLEET_CONTAINER_CACHE:-/var/cache/tickfleet}
CONF=${TICKFLEET_CONTAINERS_CONF:-/etc/containers/containers.conf}
sudo_cmd=()
[ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
log() { echo "containers setup: $*" >&2; }

need_apt=()
command -v podman >/dev/null 2>&1 || need_apt+=(podman)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
command -v debootstrap >/dev/null 2>&1 || need_apt+=(debootstrap)
# Container names resolve on a podman network through CNI's dnsname plugin.
[ -x /usr/lib/cni/dnsname ] || need_apt+=(golang-github-containernetworking-plugin-dnsname)
# The init of pods' pause containers (`podman kube play`).
command -v catatonit >/dev/null 2>&1 || need_apt+=(catatonit)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]} with apt"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# runc (crun is not packaged for this use here), cgroupfs (no systemd session to hand cgroups
# to) and no default ulimits (raising them is refused in this kind of sandbox).
"${sudo_cmd[@]}" mkdir -p "$(dirname "$CONF")"
"${sudo_cmd[@]}" node "$(dirname "$0")/set-containers-conf.mjs" "$CONF" \
  'engine.runtime="runc"' 'engine.cgroup_manager="cgroupfs"' 'containers.default_ulimits=[]'

node_version=$(node -p process.version)
ca=${NODE_EXTRA_CA_CERTS:-}
ca_sum=none
[ -n "$ca" ] && [ -f "$ca" ] && ca_sum=$(sha256sum "$ca" | cut -c1-12)
base="localhost/tickfleet-node:${node_version#v}-bookworm-$ca_sum"
redis=localhost/tickfleet-redis:bookworm
if podman image exists "$base" && podman image exists "$redis"; then
  echo "$base"
  exit 0
fi

tarball="$CACHE/rootfs-bookworm-minbase.tar"
"${sudo_cmd[@]}" mkdir -p "$CACHE"
if [ ! -f "$tarball" ]; then
  mirror=${TICKFLEET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  log "debootstrap --variant=minbase bookworm from $mirror (about a minute)"
  tmp=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  trap '"${sudo_cmd[@]}" rm -rf "$tmp"' EXIT
  "${sudo_cmd[@]}" debootstrap --variant=minbase bookworm "$tmp/root" "$mirror" >"$tmp/debootstrap.log" 2>&1 \
    || { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
  "${sudo_cmd[@]}" rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
  "${sudo_cmd[@]}" tar -C "$tmp/root" --numeric-owner -cf "$tarball.tmp" .
  "${sudo_cmd[@]}" mv "$tarball.tmp" "$tarball"
fi

rootfs=localhost/tickfleet-rootfs:bookworm-minbase
podman image exists "$rootfs" || podman import "$tarball" "$rootfs" >/dev/null

# The machine's Node layered onto that root filesystem with a two-line build.
podman image exists "$base" || log "building $base"
layer=$(mktemp -d)
trap 'rm -rf "$layer"' EXIT
mkdir -p "$layer/root/usr/bin" "$layer/root/usr/lib/node_modules" "$layer/root/usr/include" "$layer/root/etc/ssl/tickfleet"
cp -L "$(command -v node)" "$layer/root/usr/bin/node"
cp -a "$(npm root -g)/npm" "$layer/root/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$layer/root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$layer/root/usr/bin/npx"
# node-gyp compiles against these instead of downloading Node's headers.
cp -a /usr/include/node "$layer/root/usr/include/node"
{
  echo "FROM $rootfs"
  echo "COPY root/ /"
  echo "ENV npm_config_nodedir=/usr"
  if [ "$ca_sum" != none ]; then
    # TLS to the npm registry goes through this machine's CA bundle.
    cp "$ca" "$layer/root/etc/ssl/tickfleet/ca.crt"
    echo "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/tickfleet/ca.crt"
  fi
  echo 'CMD ["node"]'
} >"$layer/Containerfile"
podman image exists "$base" || podman build -q -t "$base" "$layer" >/dev/null
if ! podman image exists "$redis"; then
  log "building $redis"
  printf '%s\n' "FROM $rootfs" \
    'RUN apt-get update && apt-get install -y --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/*' \
    'ENTRYPOINT ["redis-server"]' | podman build -q -t "$redis" -f - "$layer" >/dev/null
fi
echo "$base"
