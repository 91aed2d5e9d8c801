"""The data plane's state over storage/: topics and their partitions with their
logs, fetch sessions, flushing, and the background work on logs (retention,
rolls, compaction, idle connections)."""
