"""Shared code for the Odradek test suite (broker process control, real-client drivers)."""
