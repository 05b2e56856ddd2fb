"""The live pipeline around the rules core: the settling worker (aiokafka transactions, one
producer per partition: worker.py), its shell (decode, settle, encode: shell.py), the table-state
recovery, the service with its web page and metrics, and `tail`. Kafka clients come from
craps_streams.kafka; the settling step from craps_streams.settle."""
