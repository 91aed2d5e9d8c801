"""Configuration: the broker's settings read from server.properties, KAFKA_*
variables and overrides (Kafka's names), listeners and their security protocols,
topic and group configs with their checks, and the cluster's roles and quorum
settings. No I/O beyond reading and writing its own files.
May use: nothing else of broker/ (it is the bottom)."""
