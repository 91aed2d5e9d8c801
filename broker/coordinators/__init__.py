"""The runtime side of the coordinators in coordinator/: the transaction
coordinator's markers and producer ids, the share coordinator's sessions and
acquisitions. The state machines stay in coordinator/; these wire them to the
log and to the requests, and say what they need of the broker as protocols.
May use: settings/, dataplane/ (and coordinator/, storage/, protocol/)."""
