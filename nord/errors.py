"""One exception root for nord, with a subclass for each kind of mistake.

Every message says which rule was broken, what was given, and how to fix it::

    try:
        descriptor.validate()
    except nord.DescriptorError as error:
        print(error)
"""

__all__ = ["NordError", "ConfigurationError", "MissingDependencyError", "DescriptorError",
           "UnknownLayerError", "DuplicateLayerError", "DanglingConnectionError",
           "CycleError", "UnreachableLayerError", "EmptyDescriptorError",
           "LayerParameterError", "ShapeError", "CandidateTooLargeError", "DataError",
           "MissingDataError", "CorruptDataError", "DistributedError", "SearchSpaceError",
           "JournalError", "JournalInUseError", "DiskFullError", "RunInterrupted", "BenchmarkError",
           "ProxyError"]


class NordError(Exception):
    """Root of every error nord raises on purpose."""


class ConfigurationError(NordError, ValueError):
    """An argument is outside its documented range or of the wrong kind."""


class MissingDependencyError(NordError, ImportError):
    """An optional dependency (mpi4py, horovod, pygmo, ...) is needed but not installed."""


# --- descriptors and layers -------------------------------------------------------------
class DescriptorError(NordError, ValueError):
    """A NeuralDescriptor breaks a rule of graph construction."""


class UnknownLayerError(DescriptorError, KeyError):
    """A layer type that is not in the layer registry."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0] if self.args else ""


class DuplicateLayerError(DescriptorError):
    """Two layers with the same name."""


class DanglingConnectionError(DescriptorError):
    """A connection from or to a layer that was never added."""


class CycleError(DescriptorError):
    """A connection that would close a cycle."""


class UnreachableLayerError(DescriptorError):
    """A layer not reachable from the input, or not reaching the output."""


class EmptyDescriptorError(DescriptorError):
    """A descriptor with no layers."""


class LayerParameterError(DescriptorError):
    """A layer's parameters do not fit its signature."""


class ShapeError(NordError, ValueError):
    """A descriptor cannot be realised for the given input shape."""


class CandidateTooLargeError(NordError, MemoryError):
    """A network refused before it was allocated: more parameters than allowed, or more
    memory than its device has free (the message says what it would need)."""


# --- data --------------------------------------------------------------------------------
class DataError(NordError):
    """A data set cannot be loaded."""


class MissingDataError(DataError, FileNotFoundError):
    """The files of a data set are not where they were looked for."""


class CorruptDataError(DataError):
    """A data set file is truncated, corrupted or not in the expected format."""


# --- parallel, search, journal, benchmarks -----------------------------------------------
class DistributedError(NordError, RuntimeError):
    """MPI or Horovod set-up or communication went wrong."""


class SearchSpaceError(NordError, ValueError):
    """A genome does not fit its search space."""


class JournalError(NordError):
    """A run journal cannot be written, read or resumed."""


class JournalInUseError(JournalError):
    """Another live process is writing the journal (its host and pid are named)."""


class DiskFullError(JournalError, OSError):
    """The disk holding a journal (or a checkpoint) is full."""


class RunInterrupted(KeyboardInterrupt):
    """A run was asked to stop (SIGINT, SIGTERM): it ends cleanly and can be resumed.

    A KeyboardInterrupt, so that evaluators, which record every other exception as a failed
    candidate, let it through.
    """

    def __init__(self, signal_name: str = "SIGINT"):
        super().__init__(signal_name)
        self.signal_name = signal_name

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as shells report a process ended by it (130 for
        SIGINT, 143 for SIGTERM): a batch scheduler sees which signal ended the run."""
        import signal
        try:
            return 128 + int(signal.Signals[self.signal_name])
        except KeyError:
            return 130


class BenchmarkError(NordError, ValueError):
    """A tabular-benchmark query that cannot be answered (invalid cell string, unknown data set)."""


class ProxyError(NordError, ArithmeticError):
    """A zero-cost proxy that cannot be computed for a network (no weights, a NaN or an
    infinite score); an evaluator records it as a failed result."""
