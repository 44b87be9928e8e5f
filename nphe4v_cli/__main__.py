"""`python -m nphe4v_cli ...` is the `nphe4v` command."""

if __name__ == "__main__":  # importing this module (a walk over the package) must not run the command
    from nphe4v_cli.app import main

    main()
