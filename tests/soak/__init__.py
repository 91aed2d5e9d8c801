"""Soak test: kill -9 cycles of one broker under mixed client load, then a check of
what the clients were promised (run as ``PYTHONPATH=tests python -m soak.soak``)."""
