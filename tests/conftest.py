"""Tests assemble schedulers directly, as the simulator and the Kubernetes backend do: the
built-in plugins and actions are registered first."""

import berth.actions  # noqa: F401
import berth.plugins  # noqa: F401
