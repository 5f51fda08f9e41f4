# syntax=docker/dockerfile:1
# Node.js 22 LTS on Debian bookworm, pinned by the digest of the multi-platform image index, so every
# build starts from the same bytes. Taken from Docker's own record of the official image
# (docker-library/repo-info, repos/node/remote/22-bookworm-slim.md: index built 2026-09-19, NODE_VERSION 22.23.2).
# Refresh (docs/operations.md, "Image"): docker buildx imagetools inspect node:22-bookworm-slim (its "Digest:" line).
ARG NODE_IMAGE=node:22-bookworm-slim@sha256:48e4b67d85f87bd551df43704e24d252f56cc5f8e9718841aace50f19948f0f9

# Build stage: compile TypeScript with the full dev toolchain.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Production dependencies only (no dev toolchain, no test libraries).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

# Runtime stage: the compiled server (dist/src) and production dependencies, nothing else: no tools/
# (so no local development database: without MONGODB_URI the server refuses to start, exit code 2),
# no test or bench code. Files belong to root; the server runs as `node` and may write only DATA_DIR.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/app/.data
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000
# Liveness only (/healthz): a database outage makes /readyz fail, and restarting the process would not help.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node itself is PID 1 (no npm in between), so SIGTERM reaches the server's graceful shutdown.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/server.js"]
