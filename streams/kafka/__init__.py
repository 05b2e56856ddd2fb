"""Kafka: how clients log in (security) and who may do what (access)."""
