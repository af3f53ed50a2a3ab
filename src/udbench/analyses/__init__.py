"""udbench.analyses (see DESIGN.md)."""
