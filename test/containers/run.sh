#!/usr/bin/env bash
# pnpm test:containers: makes sure podman and the local node:20-slim base image exist (the shared
# container-base.sh installs podman from Debian and builds the base; CONTAINER_BASE_SCRIPT overrides
# where it is), then runs the container test. Arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/../.."
base_script=${CONTAINER_BASE_SCRIPT:-/work/shared/tools/container-base.sh}
if ! command -v podman >/dev/null 2>&1 || ! podman image exists docker.io/library/node:20-slim; then
  if [ ! -f "$base_script" ]; then
    echo "podman or the node:20-slim base image is missing, and $base_script is not there to make them" >&2
    exit 1
  fi
  bash "$base_script" 20
fi
exec pnpm exec jest --config test/containers/jest.config.js --runInBand "$@"
