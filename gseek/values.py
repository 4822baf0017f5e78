"""Options as values: what every options class of gseek shares (``MapOptions``, ``ReadOptions``,
``SamOptions``, ``PairOptions``, ``AlignOptions``, ``BlastOptions``).

An options class is a frozen dataclass that checks its fields where it is made (its
``__post_init__``, :class:`~gseek.errors.OptionError` naming the rule) and is passed whole
from the command line or the caller down to the task that uses it. :class:`OptionsValue`
gives each the same small protocol: :meth:`~OptionsValue.to_dict` / :meth:`~OptionsValue.from_dict`
(JSON types: tuples travel as lists), :meth:`~OptionsValue.to_json` / :meth:`~OptionsValue.from_json`
(what a request to ``gseek serve`` carries), :meth:`~OptionsValue.changed` (the fields that
differ from the defaults) and :meth:`~OptionsValue.replace` (a copy, checked again).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo(OptionsValue):
...     size: int = 1
...     pair: tuple[int, int] | None = None
>>> Demo(size=3, pair=(1, 2)).to_json()
'{"size": 3, "pair": [1, 2]}'
>>> Demo.from_json('{"size": 3, "pair": [1, 2]}') == Demo(3, (1, 2))
True
>>> Demo().changed(), Demo(size=2).changed()
({}, {'size': 2})
>>> Demo.from_dict({"colour": "red"})
Traceback (most recent call last):
...
gseek.errors.OptionError: unknown Demo option(s): colour (known: size, pair)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeVar

from .errors import OptionError

__all__ = ["OptionsValue"]

V = TypeVar("V", bound="OptionsValue")


def _plain(value: Any) -> Any:
    """A field's value in JSON types (tuples as lists, recursively)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _frozen(value: Any) -> Any:
    """A JSON value back as the field holds it (lists as tuples, recursively: hashable, picklable)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


class OptionsValue:
    """Mixin of gseek's frozen options dataclasses: JSON, the changed fields, a checked copy."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """Every field, in JSON types."""
        return {name: _plain(getattr(self, name)) for name in self.field_names()}

    @classmethod
    def from_dict(cls: type[V], data: dict[str, Any]) -> V:
        """The value of these fields (missing ones: the defaults), checked; an unknown name raises."""
        if not isinstance(data, dict):
            raise OptionError(f"{cls.__name__}: expected an object of options, not {type(data).__name__}")
        names = cls.field_names()
        unknown = [k for k in data if k not in names]
        if unknown:
            raise OptionError(f"unknown {cls.__name__} option(s): {', '.join(map(str, unknown))} "
                              f"(known: {', '.join(names)})")
        return cls._make({k: _frozen(v) for k, v in data.items()})

    @classmethod
    def _make(cls: type[V], fields: dict[str, Any]) -> V:
        """The value of ``fields`` (a subclass with presets builds it from them)."""
        return cls(**fields)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls: type[V], text: str | bytes) -> V:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise OptionError(f"{cls.__name__}: not JSON ({exc})") from None
        return cls.from_dict(data)

    def changed(self) -> dict[str, Any]:
        """The fields whose values differ from the class's defaults (as held, not as JSON)."""
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            default = f.default if f.default is not dataclasses.MISSING else \
                f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING
            value = getattr(self, f.name)
            if default is dataclasses.MISSING or value != default:
                out[f.name] = value
        return out

    def replace(self: V, **changes: Any) -> V:
        """A copy with ``changes``, checked as a new value is."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]
