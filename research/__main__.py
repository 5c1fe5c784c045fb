import sys

from research.cli import main

sys.exit(main())
