"""The task grid selected by the options of ``udbench generate`` (and ``udbench plan``).

The grid itself is :func:`udbench.tasks.grid.expand_grid` (the tasks layer, so that the
campaigns and recipes can expand a suite's grid without reaching up to the commands); it is
re-exported here for the command modules.
"""

from __future__ import annotations

from udbench.tasks.grid import expand_grid

__all__ = ["expand_grid"]
