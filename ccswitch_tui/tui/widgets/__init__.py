"""Widgets of the ccs TUI."""
