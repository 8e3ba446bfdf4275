import sys

from builder.cli.episodes import main

sys.exit(main())
