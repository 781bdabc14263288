"""`python -m gregor ...` is the `gregor` command."""
from gregor.cli.main import main

if __name__ == "__main__":
    main()
