"""The network side: listeners and their sockets, one connection's loop (frames in,
answers out in request order), the set of live connections and the memory their
requests may hold. Uses protocol/ for frames and headers and hands each request
to handlers/; knows nothing of topics, groups or the cluster."""
