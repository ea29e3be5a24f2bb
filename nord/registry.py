"""Registry: names for the things a run is made of (layers, data sets, algorithms, spaces, ...).

Every registry of nord is one of these, so every name follows one rule: case, ``-``, ``_``
and spaces do not matter, and an entry may have aliases::

    from nord.registry import Registry

    spaces = Registry("search space", hint="Register yours with register_space(name, cls)",
                      plugins="nord.spaces")
    spaces.register("conv", ConvSpace, aliases=("paper",), description="the paper's chain")
    spaces.register("mine", "mypackage.spaces.MySpace")   # imported on first load()
    spaces.get("Paper")                 # ConvSpace: the same entry

An unknown name raises :class:`~nord.errors.ConfigurationError` listing the valid ones.
Details (the ``register_<thing>`` idiom, entry-point plug-ins): docs/registry.md.
"""
from __future__ import annotations

import difflib
import functools
import importlib
import logging
from dataclasses import dataclass
from types import ModuleType
from typing import (Any, Callable, Dict, Generic, Iterator, List, Optional, Sequence, Tuple,
                    TypeVar)

from nord.checks import given
from nord.errors import ConfigurationError

T = TypeVar("T")

__all__ = ["Registry", "Entry", "normalise_name", "import_dotted", "check_subclass",
           "first_line"]

logger = logging.getLogger(__name__)


def normalise_name(name: str) -> str:
    """The form names are compared in: lower case without '-', '_' and spaces."""
    return "".join(c for c in str(name).lower() if c not in "-_ ")


def import_dotted(path: str) -> Any:
    """The object a ``'package.module.attribute'`` path names, importing its module.

    Registries hold such paths so that naming a thing does not import it (torch, a
    benchmark's table) until it is used.

    Raises:
        ImportError: the module does not import. AttributeError: it has no such attribute.
    """
    module, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def _dotted_path(obj: Any) -> str:
    """``'package.module.Name'`` of a class: what :func:`import_dotted` reads."""
    return f"{obj.__module__}.{obj.__qualname__}"


def check_subclass(cls: Any, base: type, name: str) -> None:
    """Refuse to register ``cls`` as ``name`` unless it is a subclass of ``base``.

    Raises:
        ConfigurationError: naming the base class to subclass.
    """
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigurationError(
            f"only {base.__name__} subclasses can be registered; got {cls!r} for {name!r}")


def _same(registered: Any, value: Any) -> bool:
    """Whether ``value`` is what is registered already, or the class a registered path names."""
    if isinstance(registered, str) and isinstance(value, type):
        return registered == _dotted_path(value)
    return registered is value or registered == value


def first_line(cls: Any) -> str:
    """The first line of a class's docstring ('' for a dotted path): the description a
    registered class gets when none is given."""
    return "" if isinstance(cls, str) else (getattr(cls, "__doc__", None) or "").split("\n")[0]


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
        plugins: the entry-point group other packages declare their entries in
            ('nord.spaces'), loaded on the first miss; None: no plug-ins.
        adopt: registers an entry point's object that did not register itself, as
            ``adopt(name, obj)`` (default: :meth:`register` it as it is), for registries
            whose values wrap the object.
        base: the class every class added with :meth:`add` must subclass (None: any class,
            so that a registry can hold classes it must not import).
    """

    def __init__(self, kind: str, hint: str = "", plugins: Optional[str] = None,
                 adopt: Optional[Callable[[str, Any], Any]] = None,
                 base: Optional[type] = None):
        self.kind = kind
        self.hint = hint
        self.plugins = plugins
        self.adopt = adopt
        self.base = base
        self._plugins_loaded = plugins is None
        self._entries: Dict[str, Entry[T]] = {}   # canonical name -> entry, in order
        self._keys: Dict[str, str] = {}           # normalised name or alias -> canonical name

    def register(self, name: str, value: T, aliases: Sequence[str] = (), description: str = "",
                 overwrite: bool = False) -> Entry[T]:
        """Add ``value`` under ``name`` and its ``aliases``.

        Registering the same value under the same name again (also a class whose dotted path
        was registered) keeps the entry as it is: a module imported twice registers twice.

        Raises:
            ConfigurationError: an empty name, or a name or alias already taken by another
                entry (pass ``overwrite=True`` to replace an entry of the same name).
        """
        if not isinstance(name, str) or not normalise_name(name):
            raise ConfigurationError(f"a {self.kind} name must be a non-empty string; got {name!r}")
        existing = self._entries.get(name)
        if existing is not None and not overwrite and _same(existing.value, value):
            return existing
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

    def add(self, name: str, cls: Any = None, *, aliases: Sequence[str] = (),
            description: str = "", overwrite: bool = False,
            wrap: Optional[Callable[[Any], T]] = None):
        """What every ``register_<thing>`` function does: register the class ``cls`` (or its
        ``'module.Class'`` path) as ``name``, and return it; without ``cls``, a class
        decorator that does so.

        Args:
            name: the name; ``aliases``: other names for the same entry.
            cls: a subclass of ``base``, or a dotted path (imported on first use).
            description: one line for help texts (default: the first line of its docstring).
            overwrite: replace an entry of the same name.
            wrap: what is stored for ``cls`` (default: ``cls`` itself).

        Raises:
            ConfigurationError: ``cls`` is not a subclass of ``base``, or a name is taken.
        """
        if cls is None:
            return functools.partial(self.add, name, aliases=aliases, description=description,
                                     overwrite=overwrite, wrap=wrap)
        if self.base is not None and not isinstance(cls, str):
            check_subclass(cls, self.base, name)
        self.register(name, wrap(cls) if wrap is not None else cls, aliases=aliases,
                      description=description or first_line(cls), overwrite=overwrite)
        return cls

    def unregister(self, name: str) -> None:
        """Remove an entry and its aliases (no error when absent)."""
        canonical = self._keys.get(normalise_name(name))
        entry = self._entries.pop(canonical, None) if canonical else None
        if entry is not None:
            for label in (entry.name, *entry.aliases):
                self._keys.pop(normalise_name(label), None)

    def find(self, name: Any) -> Optional[Entry[T]]:
        """The entry of ``name`` or of an alias, or None (after loading the plug-ins once)."""
        if not isinstance(name, str):
            return None
        canonical = self._keys.get(normalise_name(name))
        if canonical is None and not self._plugins_loaded:
            self.load_plugins()
            canonical = self._keys.get(normalise_name(name))
        return None if canonical is None else self._entries[canonical]

    def entry(self, name: Any) -> Entry[T]:
        """The entry of ``name`` or of an alias.

        Raises:
            ConfigurationError: unknown name; the message lists the valid names.
        """
        found = self.find(name)
        if found is None and not isinstance(name, str):
            raise ConfigurationError(
                f"a {self.kind} is chosen by its name, a string; got {given(name)}. Valid names "
                f"are: {', '.join(self.choices())}" + (f". {self.hint}" if self.hint else ""))
        if found is None:
            close = difflib.get_close_matches(normalise_name(name), list(self._keys), n=1,
                                              cutoff=0.6) if isinstance(name, str) else []
            guess = f"did you mean {self._keys[close[0]]!r}? " if close else ""
            raise ConfigurationError(
                f"unknown {self.kind} {name!r}; {guess}valid names are: "
                f"{', '.join(self.choices())}" + (f". {self.hint}" if self.hint else ""))
        return found

    def get(self, name: Any) -> T:
        """The value registered under ``name`` or an alias (see :meth:`entry`)."""
        return self.entry(name).value

    def load(self, name: Any) -> Any:
        """The value of ``name``, imported first when it was registered as a dotted
        ``'module.attribute'`` path (see :meth:`entry`)."""
        value = self.entry(name).value
        return import_dotted(value) if isinstance(value, str) else value

    def canonical(self, name: Any) -> str:
        """The registered name that ``name`` (a name or an alias, in any spelling) means."""
        return self.entry(name).name

    def names(self) -> List[str]:
        """The registered names, sorted (the plug-ins' included)."""
        if not self._plugins_loaded:
            self.load_plugins()
        return sorted(self._entries)

    def choices(self) -> List[str]:
        """The registered names with their aliases in brackets, sorted: for help texts."""
        return [self._entries[name].label for name in self.names()]

    def entries(self) -> List[Entry[T]]:
        """Every entry, sorted by name."""
        return [self._entries[name] for name in self.names()]

    def load_plugins(self) -> None:
        """Load the entry points of the ``plugins`` group whose names are not registered yet
        (see the module docstring); the first miss or listing calls it.

        A plug-in that fails to import is logged and left out: one broken package must not
        take every other name with it.
        """
        self._plugins_loaded = True
        if self.plugins is None:
            return
        # imported here: importlib.metadata adds about 20 ms (a tenth) to `import nord`, and
        # only a miss needs it
        from importlib.metadata import entry_points

        for point in entry_points(group=self.plugins):
            if normalise_name(point.name) in self._keys:
                continue
            try:
                loaded = point.load()   # a module that registers itself does so here
            except Exception as error:  # noqa: BLE001 - any failure of a third party's import
                logger.warning("%s plug-in %r (%s) does not load: %s: %s", self.kind, point.name,
                               point.value, type(error).__name__, error)
                continue
            if normalise_name(point.name) not in self._keys and not isinstance(loaded, ModuleType):
                (self.adopt or self.register)(point.name, loaded)

    def copy(self) -> "Registry[T]":
        """An independent registry with the same entries (e.g. to register things temporarily)."""
        clone: Registry[T] = Registry(self.kind, self.hint, self.plugins, self.adopt, self.base)
        clone._plugins_loaded = self._plugins_loaded
        clone._entries, clone._keys = dict(self._entries), dict(self._keys)
        return clone

    def __contains__(self, name: Any) -> bool:
        return self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
