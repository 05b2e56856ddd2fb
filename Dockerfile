# The charting library of the floor view, fetched from npm at build time (pinned by package-lock.json).
FROM node:20-slim AS assets
WORKDIR /assets
COPY infra/floor/package.json infra/floor/package-lock.json ./
RUN npm ci --no-audit --no-fund --silent

# The wheel, with its native accelerator (docs/native-core.md): the Rust toolchain of the official
# rust image beside the same Python as the runtime stage, and a C compiler for the linker.
FROM python:3.11-slim AS wheel
COPY --from=rust:1-slim /usr/local/cargo /usr/local/cargo
COPY --from=rust:1-slim /usr/local/rustup /usr/local/rustup
ENV CARGO_HOME=/usr/local/cargo RUSTUP_HOME=/usr/local/rustup PATH=/usr/local/cargo/bin:$PATH
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY native ./native
COPY craps_streams ./craps_streams
COPY --from=assets /assets/node_modules/chart.js/dist/chart.umd.js ./craps_streams/floor/static/vendor/chart.umd.js
# The accelerator is optional to the package's build but not to this image: no .so, no image.
RUN pip wheel --no-cache-dir --no-deps -w /wheels . \
    && python -c "import sys, zipfile, glob; names = zipfile.ZipFile(glob.glob('/wheels/*.whl')[0]).namelist(); sys.exit(not any(n.startswith('craps_streams/accelerator/_native') for n in names))"

FROM python:3.11-slim
WORKDIR /app
COPY schemas ./schemas
ENV CRAPS_SCHEMA_DIR=/app/schemas CRAPS_CORE=native
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
