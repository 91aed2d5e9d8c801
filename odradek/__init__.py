"""Odradek: a Kafka-compatible broker in asyncio Python.

The installed package, under one name. Its parts are the repository's top-level
folders, mapped in by setup.py:

    odradek.protocol     sans-IO Kafka protocol: frames, headers, codecs, record batches
    odradek.storage      the partition log: segments, indexes, recovery, compaction
    odradek.coordinator  coordinator shards as state machines, and their runtime
    odradek.broker       the server: network, settings, handlers, cluster roles, ...
    odradek.spark        the Spark connector (pip install 'odradek[spark]')

Run it with `odradek` or `python -m odradek`; test against it with `odradek.testing`
and the pytest plugin's fixtures.
"""
