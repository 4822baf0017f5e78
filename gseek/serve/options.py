"""A request's options as JSON, made into the values the engine takes (and back).

These few functions are the one place where the JSON of a request becomes
options: when the options objects of the front doors exist, they replace the
bodies here, the JSON staying the same.

>>> blast_options("blastn", {"evalue": 1e-5, "dust": [20, 64, 1]})
BlastOptions(task='blastn', evalue=1e-05)
>>> blast_options("megablast", {"wordsize": 3})
Traceback (most recent call last):
...
gseek.errors.OptionError: unknown BLAST option(s): wordsize
>>> map_options({"mismatches": 1, "no_unal": True})
{'mismatches': 1, 'no_unal': True}
>>> output_format("megablast", "7 std qlen"), output_format("map", None)
('7 std qlen', 'sam')
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gseek.errors import OptionError

__all__ = ["BLAST_TASKS", "MAP_KEYS", "TASKS", "blast_options", "blast_options_json", "map_options", "output_format"]

BLAST_TASKS = ("megablast", "blastn")
TASKS = (*BLAST_TASKS, "map")
#: The read-mapping options a request may give (``gseek search --task map``'s, as
#: :func:`~gseek.pipeline.map_files` takes them): nothing that names a file.
MAP_KEYS = ("mismatches", "max_alignments", "report_all", "max_hits", "norc", "nofw", "no_unal", "xa_limit",
            "cigar_eq", "phred64", "trim5", "trim3", "skip", "upto")
_MAP_TYPES = {"report_all": bool, "norc": bool, "nofw": bool, "no_unal": bool, "cigar_eq": bool, "phred64": bool}


def _object(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise OptionError(f"options must be a JSON object, not {type(options).__name__}")
    return options


def blast_options(task: str, options: Any) -> Any:
    """The :class:`~gseek.blast.options.BlastOptions` of ``task`` with the JSON object ``options``
    (its field names, ``dust`` null or ``[level, window, linker]``) applied and checked."""
    from gseek.blast.options import BlastOptions

    values = dict(_object(options))
    if "task" in values and values.pop("task") != task:
        raise OptionError(f"options: task {options['task']!r} is not the request's task {task!r}")
    defaults = {f.name: f.default for f in dataclasses.fields(BlastOptions)}
    for name, value in values.items():
        if name in defaults:
            values[name] = _json_value(name, value, defaults[name])
    return BlastOptions.for_task(task, **values)


def _json_value(name: str, value: Any, default: Any) -> Any:
    """A JSON ``value`` of the BlastOptions field ``name`` checked against the type of its ``default``."""
    if name == "dust":  # null (no DUST) or [level, window, linker]
        if value is None:
            return None
        if isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value):
            return tuple(value)
        raise OptionError(f"option dust: expected null or [level, window, linker], not {value!r}")
    if value is None and name == "max_hsps":
        return None
    if isinstance(default, bool) or isinstance(default, str):
        if type(value) is not type(default):
            raise OptionError(f"option {name}: expected {'true/false' if isinstance(default, bool) else 'a string'}, "
                              f"not {value!r}")
        return value
    if isinstance(default, float) and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if type(value) is int and not isinstance(default, float):
        return value
    raise OptionError(f"option {name}: expected {'a number' if isinstance(default, float) else 'an integer'}, "
                      f"not {value!r}")


def blast_options_json(options: Any) -> dict[str, Any]:
    """``options`` (a :class:`~gseek.blast.options.BlastOptions`) as the JSON object of a request."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(options).items()}


def map_options(options: Any) -> dict[str, Any]:
    """The JSON object ``options`` as :func:`~gseek.pipeline.map_files` keywords, checked as
    ``gseek search --task map`` checks them."""
    values = dict(_object(options))
    unknown = sorted(set(values) - set(MAP_KEYS))
    if unknown:
        raise OptionError(f"unknown mapping option(s): {', '.join(unknown)}")
    for name, value in values.items():
        want = _MAP_TYPES.get(name, int)
        if value is None and name in ("max_alignments", "max_hits", "upto"):
            continue
        if want is bool and not isinstance(value, bool) or want is int and (isinstance(value, bool)
                                                                            or not isinstance(value, int)):
            raise OptionError(f"option {name}: expected {'true/false' if want is bool else 'an integer'}, "
                              f"not {value!r}")
        if want is int and value < 0:
            raise OptionError(f"option {name}: must be >= 0, not {value}")
    if values.get("max_hits") is not None and not values.get("report_all"):
        raise OptionError("--max-hits caps --all; give --all too")
    from gseek.mapper import check_map_options

    checked = {k: values[k] for k in ("max_alignments", "report_all", "max_hits", "norc", "nofw", "xa_limit")
               if k in values}
    check_map_options(values.get("mismatches", 2), **checked)
    return values


def output_format(task: str, fmt: Any) -> str:
    """The output of a request: BLAST's ``6``/``7`` (with field keywords), ``sam`` or ``json``
    (records) for the BLAST tasks (default ``6``); ``sam`` for ``map``."""
    if fmt is not None and not isinstance(fmt, (str, int)) or isinstance(fmt, bool):
        raise OptionError(f"format must be a string such as \"6\", \"7 std qlen\", \"sam\" or \"json\", not {fmt!r}")
    text = "" if fmt is None else str(fmt).strip()
    if task == "map":
        if text not in ("", "sam"):
            raise OptionError(f"format {text!r}: --task map writes SAM (format \"sam\")")
        return "sam"
    if text in ("", "6"):
        return "6"
    if text == "json":
        return "json"
    from gseek.blast.report import parse_outfmt

    if parse_outfmt(text)[0] not in ("6", "7", "sam", "10"):  # XML and JSON reports: gseek blastn's, not here
        raise OptionError(f"format {text!r}: the service writes BLAST tabular (6, 7, 10), sam or json records")
    return text
