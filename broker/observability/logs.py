"""structlog set-up: JSON lines when stderr is not a terminal, readable text when it is."""

from __future__ import annotations

import logging
import sys

import structlog

_level = "INFO"


def level() -> str:
    """The one level of every logger of the broker, as Kafka's log4j names it."""
    return _level


def configure(level: str = "info") -> None:
    global _level
    _level = "WARN" if level.upper() == "WARNING" else level.upper()
    renderer: structlog.typing.Processor
    if sys.stderr.isatty():
        renderer = structlog.dev.ConsoleRenderer()
    else:
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
