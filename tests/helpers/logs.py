"""Log lines a client wrote, collected for a test to look at."""

from __future__ import annotations

import logging
import uuid


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def client_logger(level: int) -> tuple[logging.Logger, LogLines]:
    """A logger of its own (for librdkafka's `logger` setting), not passed on to the
    root logger, and the lines it gets."""
    lines = LogLines()
    logger = logging.getLogger(f"client-{uuid.uuid4().hex}")
    logger.propagate = False
    logger.setLevel(level)
    logger.addHandler(lines)
    return logger, lines
