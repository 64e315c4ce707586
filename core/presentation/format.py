"""The number formatter as the presentation layer reads it: the one formatter lives in core/format.py, below
decision (the engine words its reasons with it); pages, views and reports keep importing it from here."""

from core.format import *  # noqa: F403
from core.format import __all__  # noqa: F401
