"""ccs: launch AI coding CLIs against exactly one provider, with keys in the OS keyring."""

__version__ = "0.1.0"
