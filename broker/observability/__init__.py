"""What operators see: Prometheus metrics, structured logs, the health check."""
