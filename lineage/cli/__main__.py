import sys

from lineage.cli import main

sys.exit(main())
