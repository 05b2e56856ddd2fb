# The charting library of the floor view, fetched from npm at build time (pinned by package-lock.json).
FROM node:20-slim AS assets
WORKDIR /assets
COPY infra/floor/package.json infra/floor/package-lock.json ./
RUN npm ci --no-audit --no-fund --silent

FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY streams ./streams
COPY schemas ./schemas
COPY --from=assets /assets/node_modules/chart.js/dist/chart.umd.js ./streams/floor/static/vendor/chart.umd.js
RUN pip install --no-cache-dir -e .
