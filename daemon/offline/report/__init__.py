"""A recorded session as a self-contained HTML report."""
