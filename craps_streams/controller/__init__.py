"""The table controller: the program at a table that takes events from the table's equipment,
numbers, stamps and signs them, journals them durably before it answers, and forwards the journal
to the table-events topic in order (store and forward; docs/operating/controller.md).

    journal   the SQLite journal (WAL, synchronous=FULL, group commit); no Kafka
    clock     the monotone event-time stamp
    intake    check against the contract, seq, stamp, sign, encode (pure)
    service   the controller: the group-commit writer and the sender's loop, put together
    sender    forwarding the journal through the Kafka adapter, in order, marking acknowledgements
    metrics   its Prometheus metrics
    http      the local HTTP/JSON input (and /metrics, /status, /resend)
    lines     the line protocol on stdin or a Unix socket
    seed      a new host's journal started after its tables' last seq on the topic
"""
