"""udbench.data (see DESIGN.md)."""
