"""The broker fixtures of the pipeline tests (never skipped: they fail loudly without Kafka)."""
from tests.pipeline.conftest import kafka, pipeline  # noqa: F401
