"""The network side: one connection's loop (frames in, answers out in request order),
the connections of one listener (admission, TLS principals, SASL frame limits), the
set of live connections with their limits, and the memory their requests may hold.
Hands each request to the broker through the `Server` protocol of
listener_connections.py; knows nothing of topics, groups or the cluster.
May use: settings/, security/, observability/ (and protocol/)."""
