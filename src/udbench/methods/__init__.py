"""udbench.methods (see DESIGN.md)."""
