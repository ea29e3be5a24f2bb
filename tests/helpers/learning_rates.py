"""A plug-in for ``nord run --plugin tests.helpers.learning_rates --callbacks epoch_lr``: a
training callback that records each epoch's learning rate in the learning curve, so that a test
reads where a recipe's schedule stood in every epoch, and that a resumed run took it up where
the killed one left it, from the journal alone.

    with Journal(path) as record:
        rates = [row["metrics"]["epoch_lr"] for row in record.epochs(candidate=0)]
"""
from nord.evaluators.callbacks import TrainingCallback, register_callback


class EpochLearningRate(TrainingCallback):
    """The rate the epoch just ended was trained at (callbacks are told of an epoch before
    the schedule steps to the next one's)."""

    name = "epoch_lr"

    def on_epoch_end(self, state):
        return {"epoch_lr": state.optimizer.param_groups[0]["lr"]}


register_callback("epoch_lr", EpochLearningRate,
                  description="the learning rate of each epoch, in the learning curve (tests)")
