"""Imported by every plots/ script before matplotlib (or numpy): a python3 that cannot import
matplotlib ends with a clear message and exit status 3, not a traceback.

The plots need Debian's python3-matplotlib, installed for /usr/bin/python3 (tools/install-deps.sh
installs it); another python3 first on PATH (pyenv, a virtual environment) often lacks it.
"""

import os
import sys

try:
    import matplotlib  # noqa: F401
except ImportError as e:
    prog = os.path.basename(sys.argv[0]) or "plots"
    script = sys.argv[0] or "plots/SCRIPT.py"
    rest = " ".join(sys.argv[1:])
    print(f"{prog}: error: {sys.executable} cannot import matplotlib ({e}).\n"
          f"{prog}: the plots need Debian's python3-matplotlib: run them with /usr/bin/python3, e.g.\n"
          f"  /usr/bin/python3 {script}{' ' + rest if rest else ''}\n"
          f"{prog}: (install it with: apt-get install python3-matplotlib, or tools/install-deps.sh)",
          file=sys.stderr)
    sys.exit(3)
