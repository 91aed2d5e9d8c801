"""The controllers' quorum: several voters keep `__cluster_metadata` as a Raft log, as
Kafka's KRaft does. rules.py holds the election rules (pure), state_file.py what a voter
remembers across restarts, quorum.py drives elections and replication."""
