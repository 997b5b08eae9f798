"""The `ccs` subcommands, one module per area; ``ccswitch_tui.cli`` assembles them."""
