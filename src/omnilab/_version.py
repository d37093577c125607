"""omnilab's version, in a base module of its own: the root package serves the public API
(:func:`omnilab.ask`, :func:`omnilab.evaluate`), so a lower layer that records the version
(run folders, exports) imports it from here instead of from the package above it."""

__all__ = ["__version__"]

__version__ = "0.1.0.dev0"
