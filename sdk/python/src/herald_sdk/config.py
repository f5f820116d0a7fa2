"""The plugin's own configuration, set by the operator (the ``config`` value
of its entry in the host configuration, or its sidecar file).

.. code-block:: python

    settings = herald_sdk.config.get() or {}
    required = settings.get("required", [])
"""

from __future__ import annotations

import json
from typing import Any, Optional

from herald_sdk import _host
from herald_sdk.errors import HandlerError


def get() -> Any:
    """The configuration parsed from JSON (a ``dict``, ``list``, ``str``,
    number or bool), or ``None`` when the operator gave none. Available in
    :meth:`~herald_sdk.Handler.manifest` too. Raises
    :class:`~herald_sdk.HandlerError` if the text is not JSON."""
    text = raw()
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise HandlerError(f"decoding the plugin configuration: {error}") from error


def raw() -> Optional[str]:
    """The configuration as JSON text, or ``None`` when the operator gave none."""
    return _host.config()
