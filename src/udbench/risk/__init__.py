"""udbench.risk (see DESIGN.md)."""
