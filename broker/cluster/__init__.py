"""The cluster roles: the controller and its metadata log, a broker's membership
(registration, heartbeats, the view it follows), topic admin through the
controller, replication (fetchers, ISR, high watermarks) and the client brokers
use to reach each other. Loaded only when the node is part of a cluster; what it
needs of the broker it runs in is the `Node` protocol of node.py.
May use: settings/, security/, dataplane/ (and coordinator/, storage/, protocol/)."""
