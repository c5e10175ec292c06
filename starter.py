"""xsky's command line: validate, run and steer plans. ``python starter.py --help``."""

import os
import sys

from cli.main import main

if __name__ == "__main__":
    code = main()
    # Leave without interpreter finalization: Temporal's client runtime keeps native threads
    # that can abort the process (SIGABRT) while Python tears down, after the work is done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
