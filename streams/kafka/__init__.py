"""The Kafka adapter: the only code of craps-streams that imports aiokafka or kafka-python.

    settings   client_settings(role): every client's connection settings, built in one place
    topics     topic admin: create the pipeline topics, describe what the broker holds
    reader     read_committed_range: one partition set read committed up to its end offsets
               (table-state recovery, the archive, topic replay, the audit)
    producers  the ingest producer (idempotent) and the worker's transactional producer
    consumers  the worker's group consumer and the tail's follower

Topic names and configs (no Kafka import) are in streams.topics. An import-linter contract in
pyproject.toml keeps the Kafka libraries here.
"""
