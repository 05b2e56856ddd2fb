FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY streams ./streams
COPY schemas ./schemas
RUN pip install --no-cache-dir -e .
