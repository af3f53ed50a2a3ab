"""Every ``--help`` reads as plain text: no RST literals, no sentence broken mid-line."""

from __future__ import annotations

import inspect
import re

import pytest
import typer

from udbench.cli import app, main, plain_help


def _commands(t: typer.Typer, path: tuple[str, ...] = ()):
    for c in t.registered_commands:
        yield (*path, c.name or c.callback.__name__.replace("_", "-")), c
    for g in t.registered_groups:
        yield from _commands(g.typer_instance, (*path, g.name))


COMMANDS = list(_commands(app))


def test_plain_help_joins_paragraph_lines_and_unquotes_literals():
    text = "First line\n  goes on.\n\nA ``literal`` and\n`another` one.\n- item one\n  more\n- two"
    assert plain_help(text) == (
        "First line goes on.\n\nA 'literal' and 'another' one.\n- item one more\n- two"
    )


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_help_has_no_rst_literals_and_no_broken_sentences(path, capsys):
    (command,) = [c for p, c in COMMANDS if p == path]
    texts = [command.help or inspect.getdoc(command.callback) or ""]
    for parameter in inspect.signature(command.callback).parameters.values():
        help_text = getattr(parameter.default, "help", None)
        if isinstance(help_text, str):
            texts.append(help_text)
    for text in texts:
        assert "`" not in text, text
        for paragraph in text.split("\n\n"):
            lines = paragraph.split("\n")
            assert all(re.match(r"([-*]|\d+\.) ", ln) for ln in lines[1:]), paragraph
    assert main([*path, "--help"]) == 0
    shown = capsys.readouterr().out
    assert "`" not in shown and "Usage: " in shown
