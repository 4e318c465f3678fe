# NATS for the container test: Debian's nats-server package on the local base image (no container registry
# is reachable here, so nats:2.10-alpine cannot be pulled). wget is there for compose's health check, which
# the test runs unchanged. Built by test/containers/platform.test.ts.
FROM node:20-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends nats-server wget >/dev/null \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["nats-server"]
