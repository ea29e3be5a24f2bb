"""The 2018 file loggers: ``<name>.log`` files with 2018's line format.

    from nord.legacy.logs import get_logger
    log = get_logger('Local')               # appends ./Local.log

Unlike the rest of nord, ``get_logger`` attaches a file handler to the logger it is given,
because 2018 programs expect their ``<name>.log`` files; it never touches the root logger.
``utils.get_logger`` (the 2018 name) is this function.
"""
from __future__ import annotations

import logging
import os

__all__ = ["get_logger", "LOG_FORMAT", "LOG_DATE_FORMAT"]

LOG_FORMAT = "%(asctime)s;%(name)s;%(levelname)s;%(message)s"
"""A 2018 log line: time, logger name, level and message, separated by semicolons."""
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def get_logger(loggername: str) -> logging.Logger:
    """The logger ``loggername``, writing INFO and above to ``<loggername>.log`` (appended).

    The file is relative to the working directory, as in 2018. Calling it again for the same
    name and directory adds no second handler, so no line is written twice.
    """
    logger = logging.getLogger(loggername)
    logger.setLevel(logging.INFO)
    path = os.path.abspath(f"{loggername}.log")
    for handler in logger.handlers:
        if isinstance(handler, logging.FileHandler) and handler.baseFilename == path:
            return logger
    handler = logging.FileHandler(path)
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
    logger.addHandler(handler)
    return logger
