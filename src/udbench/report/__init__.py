"""udbench.report (see DESIGN.md)."""
