"""Registry: names for the things a run is made of (layers, data sets, algorithms, spaces).

Every registry of nord is one of these, so every name follows one rule: case, ``-``, ``_``
and spaces do not matter (``'regularized-evolution'``, ``'RegularizedEvolution'`` and
``'regularized_evolution'`` are one name), and an entry may have aliases::

    from nord.registry import Registry

    algorithms = Registry("search algorithm", hint="register yours with register_algorithm")
    algorithms.register("regularized_evolution", make_rea, aliases=("rea",),
                        description="aging evolution, population 10, sample 3")
    algorithms.get("REA")               # the same entry
    algorithms.names()                  # ['regularized_evolution']
    algorithms.choices()                # ['regularized_evolution (rea)']

An unknown name raises :class:`~nord.errors.ConfigurationError` listing the valid ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Generic, Iterator, List, Optional, Sequence, Tuple, TypeVar

from nord.errors import ConfigurationError

T = TypeVar("T")

__all__ = ["Registry", "Entry", "normalise_name"]


def normalise_name(name: str) -> str:
    """The form names are compared in: lower case without '-', '_' and spaces."""
    return "".join(c for c in str(name).lower() if c not in "-_ ")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered name: its value, aliases and a one-line description."""

    name: str
    value: T
    aliases: Tuple[str, ...] = ()
    description: str = ""

    @property
    def label(self) -> str:
        """``name (alias, ...)``, as help texts list it."""
        return f"{self.name} ({', '.join(self.aliases)})" if self.aliases else self.name


class Registry(Generic[T]):
    """Names (and aliases) -> values, matched by :func:`normalise_name`.

    Args:
        kind: what the registry holds, for messages ('search algorithm').
        hint: how a user adds an entry, appended to the unknown-name error.
    """

    def __init__(self, kind: str, hint: str = ""):
        self.kind = kind
        self.hint = hint
        self._entries: Dict[str, Entry[T]] = {}   # canonical name -> entry, in order
        self._keys: Dict[str, str] = {}           # normalised name or alias -> canonical name

    def register(self, name: str, value: T, aliases: Sequence[str] = (), description: str = "",
                 overwrite: bool = False) -> Entry[T]:
        """Add ``value`` under ``name`` and its ``aliases``.

        Raises:
            ConfigurationError: an empty name, or a name or alias already taken by another
                entry (pass ``overwrite=True`` to replace an entry of the same name).
        """
        if not isinstance(name, str) or not normalise_name(name):
            raise ConfigurationError(f"a {self.kind} name must be a non-empty string; got {name!r}")
        if overwrite and name in self._entries:
            self.unregister(name)
        entry = Entry(name, value, tuple(aliases), description)
        for label in (name, *entry.aliases):
            holder = self._keys.get(normalise_name(label))
            if holder is not None:
                raise ConfigurationError(
                    f"the {self.kind} name {label!r} is taken by '{holder}'; choose another name, "
                    "or pass overwrite=True to replace an entry of the same name")
        for label in (name, *entry.aliases):
            self._keys[normalise_name(label)] = name
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry and its aliases (no error when absent)."""
        canonical = self._keys.get(normalise_name(name))
        entry = self._entries.pop(canonical, None) if canonical else None
        if entry is not None:
            for label in (entry.name, *entry.aliases):
                self._keys.pop(normalise_name(label), None)

    def find(self, name: Any) -> Optional[Entry[T]]:
        """The entry of ``name`` or of an alias, or None."""
        if not isinstance(name, str):
            return None
        canonical = self._keys.get(normalise_name(name))
        return None if canonical is None else self._entries[canonical]

    def entry(self, name: Any) -> Entry[T]:
        """The entry of ``name`` or of an alias.

        Raises:
            ConfigurationError: unknown name; the message lists the valid names.
        """
        found = self.find(name)
        if found is None:
            raise ConfigurationError(
                f"unknown {self.kind} {name!r}; valid names are: {', '.join(self.choices())}"
                + (f". {self.hint}" if self.hint else ""))
        return found

    def get(self, name: Any) -> T:
        """The value registered under ``name`` or an alias (see :meth:`entry`)."""
        return self.entry(name).value

    def canonical(self, name: Any) -> str:
        """The registered name that ``name`` (a name or an alias, in any spelling) means."""
        return self.entry(name).name

    def names(self) -> List[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def choices(self) -> List[str]:
        """The registered names with their aliases in brackets, sorted: for help texts."""
        return [self._entries[name].label for name in self.names()]

    def entries(self) -> List[Entry[T]]:
        """Every entry, sorted by name."""
        return [self._entries[name] for name in self.names()]

    def copy(self) -> "Registry[T]":
        """An independent registry with the same entries (e.g. to register things temporarily)."""
        clone: Registry[T] = Registry(self.kind, self.hint)
        clone._entries, clone._keys = dict(self._entries), dict(self._keys)
        return clone

    def __contains__(self, name: Any) -> bool:
        return self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
