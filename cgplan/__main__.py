"""`python -m cgplan` runs the CLI."""

from cgplan.cli import main

main()
