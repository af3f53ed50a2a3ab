"""udbench.evaluation (see DESIGN.md)."""
