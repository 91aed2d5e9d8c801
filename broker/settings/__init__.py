"""Configuration: the broker's settings read from server.properties, KAFKA_*
variables and overrides (Kafka's names), topic and group configs with their
checks, and the cluster's roles and quorum settings. Pure: no I/O beyond reading
a file, no imports from the rest of broker/."""
