"""udbench.tuning (see DESIGN.md)."""
