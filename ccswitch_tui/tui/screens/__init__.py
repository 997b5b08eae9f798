"""Screens and modals of the ccs TUI."""
