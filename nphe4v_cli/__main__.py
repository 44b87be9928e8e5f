"""`python -m nphe4v_cli ...` is the `nphe4v` command."""

from nphe4v_cli.app import main

main()
