"""What operators see: Prometheus metrics, structured logs, the health check.
May use: nothing else of broker/."""
