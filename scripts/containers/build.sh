#!/usr/bin/env bash
# Builds the repository's Dockerfile with podman on the local base image (setup.sh) and tags it
# TICKFLEET_IMAGE (localhost/tickfleet:dev). Layers are cached by podman between builds, and
# pnpm's store by the Dockerfile's cache mount, so a source change rebuilds in about a minute.
# Prints the image name on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${TICKFLEET_IMAGE:-localhost/tickfleet:dev}
base=$(bash scripts/containers/setup.sh)
# One build at a time on this machine: a second caller (the test started while scripts/test.sh's
# early build runs) waits, then finds every layer cached.
exec 9>"${TMPDIR:-/tmp}/tickfleet-image-build.lock"
flock 9
start=$(date +%s)
podman build --layers --build-arg NODE_IMAGE="$base" -t "$image" . >&2
echo "containers build: $image in $(($(date +%s) - start)) s, $(podman image inspect --format '{{.Size}}' "$image") bytes" >&2
echo "$image"
