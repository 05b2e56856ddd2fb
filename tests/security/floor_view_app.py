"""A faust-streaming read side logged in as the floor view's principal (tests/security/test_floor_view.py):
an agent on the settlements topic counting per table into a Table, so faust makes and uses what a
floor view needs: its assignor topic, its group, a `-changelog` topic.

    python tests/security/floor_view_app.py worker -l info --without-web
"""
import os

import faust

from craps_streams.kafka.access import floor_view_prefix
from craps_streams.kafka.settings import broker_urls, sasl_credentials
from craps_streams.settings import load, use

SETTINGS = use(load())  # this test app is an edge: a Faust app of its own
APP_ID, SETTLEMENTS = SETTINGS.app_id, SETTINGS.topics.settlements

credentials = sasl_credentials("floor")
app = faust.App(
    floor_view_prefix(APP_ID) + "sectest",
    broker=broker_urls("floor"),
    broker_credentials=faust.SASLCredentials(**credentials) if credentials else None,
    store="memory://",
    datadir=os.environ["FLOOR_VIEW_DATADIR"],
    web_enabled=False,
    topic_partitions=8,
    topic_replication_factor=1,
    consumer_auto_offset_reset="earliest",
    logging_config=None,
)
settlements = app.topic(SETTLEMENTS, key_type=bytes, value_type=bytes, key_serializer="raw",
                        value_serializer="raw", partitions=8)
counts = app.Table("settled-per-table", default=int, partitions=8)


@app.agent(settlements)
async def count(stream):
    async for key, _value in stream.items():
        table = key.decode()
        counts[table] += 1
        print(f"COUNTED {table} {counts[table]}", flush=True)


if __name__ == "__main__":
    app.main()
