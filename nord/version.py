"""nord's version: one place that the package face, the journal and the report read."""

__version__ = "0.1.0"
