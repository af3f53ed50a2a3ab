"""udbench.tasks (see DESIGN.md)."""
