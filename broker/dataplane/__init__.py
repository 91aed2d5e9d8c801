"""The data plane's state over storage/: topics and their partitions with their
logs and producer state, fetch sessions, and flushing.
May use: settings/ (and storage/, protocol/)."""
