"""Jinja2 rendering: the only place templates are loaded (jinja2 lives in ``analyzer/report/``).

Templates are looked up in the user's ``--templates-dir`` first, then in the bundled
``templates/`` folder, so a user may override any one template (or just a block, by extending
``default:nightly.html.j2``, the bundled version under a prefix). Autoescape is always on: node,
pod and namespace names come from the cluster and must never become markup.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

from analyzer.core.errors import InputError
from analyzer.core.paths import templates_dir
from analyzer.report.format import register as register_filters


def make_environment(user_dir: Path | None = None) -> jinja2.Environment:
    """An autoescaping environment: ``user_dir`` (if given) before the bundled templates."""
    bundled = jinja2.FileSystemLoader(str(templates_dir()))
    loaders: list[jinja2.BaseLoader] = []
    if user_dir is not None:
        _check_folder(user_dir)
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
    register_filters(env)
    return env


def _check_folder(user_dir: Path) -> None:
    if not Path(user_dir).is_dir():
        raise InputError(f"--templates-dir: {user_dir} is not a folder")


@functools.lru_cache(maxsize=8)
def _environment(user_dir: str | None) -> jinja2.Environment:
    # one environment per templates folder and process: its template cache then compiles each
    # template once (a fresh environment per page compiled ~57 templates in the demo); jinja2
    # still checks each template's file for changes at every load (``auto_reload``)
    return make_environment(None if user_dir is None else Path(user_dir))


def render(template: str, context: dict[str, Any], *, user_dir: Path | None = None) -> str:
    """Render ``template`` with ``context``; template problems become one-line ``InputError``s."""
    if user_dir is not None:
        _check_folder(user_dir)  # each time: the environment is kept once made
    env = _environment(None if user_dir is None else str(Path(user_dir).resolve()))
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
