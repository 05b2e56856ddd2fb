"""The batch interface of streams.app.shell.SettlementShell for the worker tests' stand-in shells,
which settle one message at a time (`handle`)."""


class OneByOne:
    """`decoded` keeps the message; `handle_batch` hands each to the stand-in's `handle`."""

    quiet = None

    def decoded(self, value, topic, partition, offset):
        return value, topic, partition, offset

    def handle_batch(self, items):
        return [self.handle(*item) for item in items]
