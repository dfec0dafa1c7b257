"""`python -m kfctl_testbed.gobuild`: what `e2e/build-binaries` runs."""

import sys

from kfctl_testbed.gobuild.cli import main

sys.exit(main())
