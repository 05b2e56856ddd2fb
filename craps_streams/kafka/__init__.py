"""The Kafka adapter: the only code of craps-streams that imports aiokafka or kafka-python.

    settings   client_settings(role): every client's connection settings, built in one place
    security   security_settings(role): TLS + SASL/SCRAM-SHA-512 as the role's principal, from the
               role's client config file (merged by client_settings)
    access     who may do what: the roles' SCRAM logins and each floor's ACLs (the administrator's)
    topics     topic admin: create the pipeline topics, describe what the broker holds
    reader     read_committed_range: one partition set read committed up to its end offsets
               (table-state recovery, the archive, topic replay, the audit)
    producers  the ingest producer (idempotent), the table controller's producer and the worker's
               transactional producer
    consumers  the worker's group consumer and the tail's follower

Topic names and configs (no Kafka import) are in craps_streams.topics. An import-linter contract in
pyproject.toml keeps the Kafka libraries here.
"""
