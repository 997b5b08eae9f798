from ccswitch_tui.cli import main

main()
