"""The simulator: berth's scheduler and controllers on a discrete-event clock.

Importing it registers the built-in plugins and actions with the framework.
"""

import berth.actions  # noqa: F401
import berth.plugins  # noqa: F401
