"""`python -m dspark_tui.sim serve MODEL ...`"""

import sys

from dspark_tui.sim.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
