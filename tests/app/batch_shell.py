"""The batch interface of craps_streams.app.shell.SettlementShell for the worker tests' stand-in shells,
which settle one message at a time (`handle`)."""
from craps_streams.app.shell import SettledBatch, SettlementShell


class OneByOne:
    """`items_of` keeps each message (or rejects one that raised before, as the real shell does);
    `handle_batch` hands each kept message to the stand-in's `handle`."""

    quiet = None

    def items_of(self, messages, partition, failed):
        return [SettlementShell.undecodable(m.value, failed[m.offset], m.topic, partition, m.offset,
                                            reason="internal_error") if m.offset in failed
                else (m.value, m.topic, partition, m.offset) for m in messages]

    def handle_batch(self, items):
        return SettledBatch.of(self.handle(*item) if type(item) is tuple else item for item in items)
