"""Stopping rules: end a candidate's training early when what it records says it is doomed.

A rule is text, parsed here without ``eval`` (names, numbers, ``< <= > >= == !=``, ``and``,
``or``, ``not``, parentheses and ``finite(name)``), or a Python callable taking the scalars
and returning a bool::

    rules = parse_rules(["dead_relu > 0.9", "not finite(loss) or valid_loss > 10"])
    check_rule_names(rules, callbacks)        # a name nobody records is refused, now
    fired = first_firing(rules, {"dead_relu": 0.95, "loss": 0.3})   # -> the first rule

Rules see every scalar of the epoch (``train_loss``, ``valid_accuracy``, ``valid_loss``,
``epoch``, ``lr``, the callbacks' scalars and the last value of each per-step series; nord's own
figures always over a callback's); at the steps
where a callback publishes, the rules that test ``finite(...)`` or read ``nonfinite`` see that
step's values and ``loss`` and ``lr``. A name with no value yet is false in a comparison and finite.
Details: docs/evaluators.md, "Stopping rules".
"""
from __future__ import annotations

import fnmatch
import math
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from nord.errors import ConfigurationError

__all__ = ["StopRule", "parse_rules", "check_rule_names", "first_firing", "stopped_by_rule",
           "EPOCH_SCALARS", "STEP_SCALARS", "AFTER_TRAINING", "BUILT_IN_SCALARS",
           "STOPPED_METRIC", "DEFAULT_RULES", "DEFAULT_CALLBACKS"]

EPOCH_SCALARS = ("train_loss", "valid_accuracy", "valid_loss", "epoch")
"""What every epoch records, whatever the callbacks."""
STEP_SCALARS = ("loss", "lr")
"""What every published step carries (``lr`` also each epoch's end: the epoch's own rate)."""
AFTER_TRAINING = ("accuracy", "test_accuracy", "test_loss", "seconds")
"""Figures nord measures itself once the epoch's rules are checked (the epoch's seconds) or
training is over (the result's): no rule can read them."""
BUILT_IN_SCALARS = EPOCH_SCALARS + STEP_SCALARS + AFTER_TRAINING
"""Names of nord's own figures: a training callback may not record a scalar by one of them
(it would shadow the real figure in the journal and in what rules read)."""
DEFAULT_CALLBACKS = ("dead_relu", "nonfinite")
DEFAULT_RULES = ("nonfinite > 0", "dead_relu > 0.6")
"""Rules that end candidates that diverged or lost most of their ReLU units, with the
callbacks that record what they read (what ``bench/stop_rules.py`` measures)."""
STOPPED_METRIC = "stopped_by"
"""The result's metric that says which rule ended training, at which epoch (and step)."""

_TOKEN = re.compile(r"\s*(?:(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf\b|nan\b)"
                    r"|(?P<op><=|>=|==|!=|<|>)|(?P<paren>[()])"
                    r"|(?P<name>[A-Za-z_][\w./-]*))")
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_WORDS = ("and", "or", "not", "finite")


class StopRule:
    """One rule: ``text`` parsed once, or a callable (``rule(values) -> bool``).

    Attributes:
        text: the rule as given (a callable's ``__name__``).
        names: the scalars it reads (empty for a callable: it may read any).
        checks_finite: whether it tests ``finite(...)`` or reads ``nonfinite`` (the NaN/inf
            watch), and so is also checked at the steps callbacks publish.
    """

    def __init__(self, rule: Union[str, Callable[[Dict[str, float]], bool]]):
        if callable(rule):
            self.text = getattr(rule, "__name__", repr(rule))
            self.names: Tuple[str, ...] = ()
            self.checks_finite = False
            self._test = lambda values: bool(rule(dict(values)))
            return
        if not isinstance(rule, str) or not rule.strip():
            raise ConfigurationError(
                f"a stopping rule is text such as 'dead_relu > 0.9' or a callable; got {rule!r}")
        self.text = " ".join(rule.split())
        tokens = _tokens(self.text)
        parser = _Parser(tokens, self.text)
        self._test = parser.parse()
        self.names = tuple(dict.fromkeys(parser.names))
        if not self.names:
            raise ConfigurationError(
                f"stopping rule {self.text!r} names no scalar, so it holds always or never; "
                "compare a recorded scalar, e.g. 'dead_relu > 0.9' or 'not finite(loss)'")
        self.checks_finite = parser.checks_finite or any(
            name.split("/")[0] == "nonfinite" for name in self.names)

    def fires(self, values: Dict[str, float]) -> bool:
        """Whether the rule holds for ``values``."""
        return self._test(values)

    def __repr__(self) -> str:
        return f"StopRule({self.text!r})"


def _tokens(text: str) -> List[Tuple[str, Any]]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            rest = text[position:].strip()
            if not rest:
                break
            raise ConfigurationError(
                f"stopping rule {text!r}: cannot read {rest[:20]!r}; a rule compares names and "
                "numbers (< <= > >= == !=), joined by and/or/not, e.g. 'dead_relu > 0.9 or "
                "not finite(loss)'")
        kind = match.lastgroup
        value = match.group(kind)
        if kind == "number":
            tokens.append(("number", float(value)))
        elif kind == "name" and value in _WORDS:
            tokens.append((value, value))
        else:
            tokens.append((kind, value))
        position = match.end()
    return tokens


class _Parser:
    """Recursive descent over the tokens; builds closures (no ``eval``)."""

    def __init__(self, tokens, text):
        self.tokens, self.text, self.at = tokens, text, 0
        self.names: List[str] = []
        self.checks_finite = False

    def parse(self):
        test = self._or()
        if self.at != len(self.tokens):
            self._fail(f"unexpected {self.tokens[self.at][1]!r}")
        return test

    def _peek(self):
        return self.tokens[self.at][0] if self.at < len(self.tokens) else None

    def _take(self, kind):
        if self._peek() != kind:
            found = self.tokens[self.at][1] if self.at < len(self.tokens) else "the end"
            self._fail(f"expected {kind} but found {found!r}")
        self.at += 1
        return self.tokens[self.at - 1][1]

    def _fail(self, why):
        raise ConfigurationError(
            f"stopping rule {self.text!r}: {why}; write comparisons of names and numbers joined "
            "by and/or/not, e.g. 'dead_relu > 0.9 or not finite(loss)'")

    def _or(self):
        return self._joined("or", self._and, any)

    def _and(self):
        return self._joined("and", self._not, all)

    def _joined(self, word, part, combine):
        """``part`` (``word`` ``part``)*: one closure, ``combine`` over the parts."""
        parts = [part()]
        while self._peek() == word:
            self.at += 1
            parts.append(part())
        return parts[0] if len(parts) == 1 else (lambda v: combine(p(v) for p in parts))

    def _not(self):
        if self._peek() == "not":
            self.at += 1
            inner = self._not()
            return lambda v: not inner(v)
        return self._atom()

    def _atom(self):
        kind = self._peek()
        if kind == "paren" and self.tokens[self.at][1] == "(":
            self.at += 1
            inner = self._or()
            if self._peek() != "paren" or self.tokens[self.at][1] != ")":
                self._fail("a '(' is not closed")
            self.at += 1
            return inner
        if kind == "finite":
            self.at += 1
            if self._peek() != "paren" or self.tokens[self.at][1] != "(":
                self._fail("finite takes one name in parentheses: finite(loss)")
            self.at += 1
            name = self._take("name")
            if self._peek() != "paren" or self.tokens[self.at][1] != ")":
                self._fail("finite takes one name in parentheses: finite(loss)")
            self.at += 1
            self.names.append(name)
            self.checks_finite = True
            return lambda v: math.isfinite(v.get(name, 0.0))
        left = self._operand()
        if self._peek() != "op":
            self._fail("a comparison needs an operator (< <= > >= == !=)")
        compare = _COMPARE[self._take("op")]
        right = self._operand()
        return lambda v: _compare(compare, left(v), right(v))

    def _operand(self):
        kind = self._peek()
        if kind == "number":
            number = self._take("number")
            return lambda v: number
        if kind == "name":
            name = self._take("name")
            self.names.append(name)
            return lambda v: v.get(name)
        self._fail(f"expected a name or a number but found "
                   f"{self.tokens[self.at][1] if kind else 'the end'!r}")


def _compare(compare, left, right) -> bool:
    if left is None or right is None:   # no value yet: the rule does not hold
        return False
    return compare(left, right)


def parse_rules(rules: Sequence[Any]) -> List[StopRule]:
    """StopRules from texts, callables or StopRules.

    Raises:
        ConfigurationError: a rule that does not parse, saying where and how to write one.
    """
    if isinstance(rules, (str, StopRule)) or callable(rules):
        rules = [rules]
    return [rule if isinstance(rule, StopRule) else StopRule(rule) for rule in rules]


def check_rule_names(rules: Sequence[StopRule], outputs: Sequence[str]) -> None:
    """Refuse a rule that names a scalar nobody records.

    Args:
        outputs: the callbacks' names and ``fnmatch`` patterns of what they record
            (``TrainingCallback.outputs()``), besides ``EPOCH_SCALARS`` and ``STEP_SCALARS``.

    Raises:
        ConfigurationError: naming the rule, the name, and what is recorded.
    """
    known = list(EPOCH_SCALARS) + list(STEP_SCALARS) + list(outputs)
    for rule in rules:
        for name in rule.names:
            if name == "loss" and not rule.checks_finite:
                raise ConfigurationError(
                    f"stopping rule {rule.text!r} names 'loss', a single step's loss, which only "
                    "the rules that test finite(...) or read nonfinite see (at the steps a "
                    "callback publishes), so it would never hold; compare train_loss (the "
                    "epoch's mean) instead, e.g. 'train_loss > 10'")
            if name in AFTER_TRAINING:
                raise ConfigurationError(
                    f"stopping rule {rule.text!r} names {name!r}, which nord measures only "
                    f"after the rules are checked (no rule sees it); a rule reads "
                    f"{', '.join(EPOCH_SCALARS + STEP_SCALARS)} or a callback's scalars")
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in known):
                raise ConfigurationError(
                    f"stopping rule {rule.text!r} names {name!r}, which nothing records: the "
                    f"scalars are {', '.join(known)}; add the callback that records it "
                    "(--callbacks), or fix the name")


def first_firing(rules: Sequence[StopRule], values: Dict[str, float],
                 finite_only: bool = False) -> Optional[StopRule]:
    """The first rule that holds for ``values`` (with ``finite_only``, among the rules that
    test ``finite(...)``), else None."""
    for rule in rules:
        if (not finite_only or rule.checks_finite) and rule.fires(values):
            return rule
    return None


def stopped_by_rule(metrics: Dict[str, Any]) -> bool:
    """Whether a result's metrics say that a stopping rule ended its training."""
    return bool(metrics.get(STOPPED_METRIC))
