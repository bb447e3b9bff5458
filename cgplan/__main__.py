"""`python -m cgplan` runs the CLI."""

try:  # Ctrl-C while the CLI module itself is compiled or imported: exit 130 quietly, as later
    from cgplan.cli import console_main
except KeyboardInterrupt:
    raise SystemExit(130) from None

console_main()
