"""``engine.command``: the argv template that runs the server some other way (a container, a wrapper).

The plugin still picks the port, so the template must place ``{port}``; it still checks the server's health on
that port, writes its log and ends its process group. The placeholders are filled in by the engine layer
(:meth:`pytest_roofline.measure.engine.EngineConfig.argv`); this module is the one home of what they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["COMMAND_PLACEHOLDERS", "check_command", "expand_command"]

#: ``{model}`` what the engine serves (engine.model / the preset's HF id / the tiny model's directory),
#: ``{port}`` the port the plugin chose, ``{host}`` the address to listen on, ``{served_model_name}`` the name
#: requests use, and ``{args}`` -- an item of its own -- the vLLM flags from ``engine.args`` (appended at the
#: end when no item is ``{args}``).
COMMAND_PLACEHOLDERS = ("model", "port", "host", "served_model_name", "args")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def check_command(command: Sequence[object]) -> None:
    """Raise ``ValueError`` (the message says what to write) unless ``command`` is a usable template."""
    if isinstance(command, str) or not command or not all(isinstance(a, str) and a for a in command):
        raise ValueError("engine.command must be a non-empty list of non-empty strings (an argv, never a shell "
                         "line), e.g. [docker, run, --rm, ..., '--port', '{port}']")
    items = [str(a) for a in command]
    names = [m.group(1) for a in items for m in _PLACEHOLDER.finditer(a)]
    unknown = sorted({n for n in names if n not in COMMAND_PLACEHOLDERS})
    if unknown:
        raise ValueError(f"engine.command names unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; "
                         f"known: {', '.join('{' + n + '}' for n in COMMAND_PLACEHOLDERS)}")
    if "port" not in names:
        raise ValueError("engine.command must place {port} (e.g. '--port', '{port}'): the plugin picks the port "
                         "and checks the server's health on it")
    if any("{args}" in a and a != "{args}" for a in items):
        raise ValueError("engine.command: {args} must be an item of its own (it expands to several arguments)")


def expand_command(command: Sequence[str], values: Mapping[str, str], flags: Sequence[str]) -> list[str]:
    """``command`` with its placeholders filled from ``values`` and the ``{args}`` item replaced by ``flags``
    (``flags`` appended at the end when no item is ``{args}``)."""
    check_command(command)
    out: list[str] = []
    placed = False
    for a in command:
        if a == "{args}":
            out += list(flags)
            placed = True
        else:
            out.append(_PLACEHOLDER.sub(lambda m: values[m.group(1)], a))
    return out if placed else out + list(flags)
