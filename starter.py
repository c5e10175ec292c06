"""xsky's command line: validate, run and steer plans. ``python starter.py --help``."""

from cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
