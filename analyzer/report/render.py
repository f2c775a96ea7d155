"""Jinja2 rendering: the only place templates are loaded (jinja2 lives in ``analyzer/report/``).

Templates are looked up in the user's ``--templates-dir`` first, then in the bundled
``templates/`` folder, so a user may override any one template (or just a block, by extending
``default:nightly.html.j2``, the bundled version under a prefix). Autoescape is always on: node,
pod and namespace names come from the cluster and must never become markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from analyzer.core.errors import InputError
from analyzer.core.paths import templates_dir

# Filters templates use to show numbers the same way everywhere.


def _fmt_number(value: Any, digits: int = 1) -> str:
    """``1234.5`` → ``1,234.5``; None/NaN → an en dash (a gap, not a zero)."""
    if value is None:
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if number != number:
        return "–"
    if digits == 0:
        return f"{round(number):,}"
    return f"{number:,.{digits}f}"


def _fmt_delta(value: Any, digits: int = 1) -> str:
    """A signed change, ``+1.5`` / ``-2.0`` / ``±0``; None → empty (no previous run)."""
    if value is None:
        return ""
    number = float(value)
    if number != number:
        return ""
    if abs(number) < 0.5 * 10**-digits:
        return "±0"
    return f"{number:+,.{digits}f}"


def make_environment(user_dir: Path | None = None) -> jinja2.Environment:
    """An autoescaping environment: ``user_dir`` (if given) before the bundled templates."""
    bundled = jinja2.FileSystemLoader(str(templates_dir()))
    loaders: list[jinja2.BaseLoader] = []
    if user_dir is not None:
        if not Path(user_dir).is_dir():
            raise InputError(f"--templates-dir: {user_dir} is not a folder")
        loaders.append(jinja2.FileSystemLoader(str(user_dir)))
    loaders.append(bundled)
    # "default:x.html.j2" always means the bundled template, so an override can extend it.
    prefixed = jinja2.PrefixLoader({"default": bundled}, delimiter=":")
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([*loaders, prefixed]),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _fmt_number
    env.filters["delta"] = _fmt_delta
    return env


def render(template: str, context: dict[str, Any], *, user_dir: Path | None = None) -> str:
    """Render ``template`` with ``context``; template problems become one-line ``InputError``s."""
    env = make_environment(user_dir)
    try:
        return env.get_template(template).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise InputError(
            f"template {exc.name!r} not found in --templates-dir or bundled templates"
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(
            f"template {exc.filename or exc.name}: line {exc.lineno}: {exc.message}; fix the template"
        ) from None
    except jinja2.UndefinedError as exc:
        raise InputError(f"template {template}: {exc.message}; fix the template") from None
