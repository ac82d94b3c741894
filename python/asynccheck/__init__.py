"""asynccheck for Python: run a script under asynccheck (python3 -m asynccheck), label findings with regions, and
check a pytest session (pytest --asynccheck). Pure Python over the asynccheck library and command; docs/python.md.
"""

from ._locate import NotFound, find_command, find_library
from ._native import report_now
from .region import region

__version__ = "0.1.0"
__all__ = ["region", "report_now", "find_library", "find_command", "NotFound", "__version__"]
