"""``python -m i_scripted``: serve a script file until killed (see ``i_scripted.cli``)."""

import sys

from i_scripted.cli import main

sys.exit(main())
