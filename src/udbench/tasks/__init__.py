"""Benchmark task instances: generation, task files and acceptance checks (SPEC §6–§7)."""

from udbench.tasks.checks import acceptance_checks
from udbench.tasks.generate import generate_task, make_task
from udbench.tasks.pooling import gate_verdicts, pool_checks
from udbench.tasks.spec import TaskSpec
from udbench.tasks.taskfile import SCHEMA_VERSION, Task, read_task_meta, task_file_is_valid
from udbench.tasks.validation import validate_prior

__all__ = [
    "SCHEMA_VERSION",
    "Task",
    "TaskSpec",
    "acceptance_checks",
    "gate_verdicts",
    "generate_task",
    "make_task",
    "pool_checks",
    "read_task_meta",
    "task_file_is_valid",
    "validate_prior",
]
