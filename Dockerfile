# Pigeon: multi-stage build. The build stage compiles TypeScript and the
# sqlite3 native module; the runtime stage carries only production files and
# runs as an unprivileged user with its data on a volume.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY test ./test
COPY bench ./bench
COPY migrations ./migrations
COPY config ./config
COPY bin ./bin
COPY console ./console
# npm ci runs `prepare`, which compiles to dist/; sqlite3 is built from source (allowScripts).
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
RUN apt-get update && apt-get install -y --no-install-recommends openssl tini && rm -rf /var/lib/apt/lists/* \
    && groupadd --system pigeon && useradd --system --gid pigeon --home-dir /var/lib/pigeon pigeon \
    && mkdir -p /var/lib/pigeon && chown pigeon:pigeon /var/lib/pigeon && chmod 0700 /var/lib/pigeon
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./
COPY migrations ./migrations
COPY config ./config
COPY bin ./bin
COPY console ./console
# Container defaults (listen on all interfaces, data on the volume); mount your own file over it.
COPY config/docker.json /etc/pigeon/pigeon.json
USER pigeon
VOLUME ["/var/lib/pigeon"]
# HTTP API, SMTP submission (STARTTLS; 465 when configured for implicit TLS), inbound bounces.
# /metrics is not exposed: it listens on 127.0.0.1:9464 inside the container. To scrape it from
# outside, set metrics.host to 0.0.0.0 and metrics.token, and publish 9464 on a private network.
# Docker 20.10+ lets this non-root user bind ports below 1024 (ip_unprivileged_port_start=0 in containers).
EXPOSE 8080 587 465 25
ENV PIGEON_CONFIG=/etc/pigeon/pigeon.json
HEALTHCHECK --interval=30s --timeout=5s CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# --max-semi-space-size=32: see README "Install on a VPS"
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=32", "dist/src/cli.js"]
CMD ["serve"]
