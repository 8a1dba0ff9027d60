"""Importing LanceDB without the work its import does for features CodeQA never uses.

`import lancedb` (0.40) takes over a second on a 2-core box, most of a `codeqa search`:
- `lancedb/db.py` imports `lance_namespace`, whose models come from
  `lance_namespace_urllib3_client`; that package's `__init__` imports nine generated REST API
  modules whose ~370 `@pydantic.validate_call` methods each build a validator at import (~0.55 s).
  A local database never calls that REST client. Here the package is registered with its real
  `__path__` but its `__init__` runs only when one of its own attributes is first asked for, so
  its `.models` (which LanceDB does use) load as usual and the client still works if anything
  ever asks for it: deferred, not removed.
- On Python < 3.12 LanceDB marks ~100 methods with `overrides.override`, which disassembles the
  module's bytecode for each (~90 ms); on 3.12+ it uses `typing.override`, a marker. During
  LanceDB's own import only, `overrides` is a module with 3.12's behaviour.
Each step falls back to the plain import when the layout it expects is not there. The cost is
reported upstream (lancedb: import of the REST namespace client on the local path). Every module
of CodeQA imports LanceDB through `lancedb_module()` (tests/test_architecture.py checks it).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import types
from typing import Any

_NAMESPACE_CLIENT = "lance_namespace_urllib3_client"
_lock = threading.Lock()


def lancedb_module() -> types.ModuleType:
    """The `lancedb` package, imported the quick way once per process."""
    with _lock:
        if "lancedb" not in sys.modules:
            os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every hybrid query otherwise; read at import
            _defer_package_init(_NAMESPACE_CLIENT)
            _import_with_marker_overrides()
        return sys.modules["lancedb"]


def _defer_package_init(name: str) -> None:
    """Register package `name` with its `__path__` (its submodules import as usual) and run its
    `__init__` on first attribute access."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    init_lock = threading.Lock()

    def __getattr__(attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        with init_lock:
            if module.__dict__.pop("__getattr__", None) is not None:
                loader.exec_module(module)  # the real __init__, into the same module object
        return getattr(module, attribute)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module


class _MarkerOverrides(types.ModuleType):
    """`overrides` as LanceDB uses it on Python 3.12+: `override` only marks a method."""

    class EnforceOverrides:
        pass

    @staticmethod
    def override(method: Any) -> Any:
        return method


def _import_with_marker_overrides() -> None:
    if sys.version_info >= (3, 12):
        import lancedb

        return
    saved = sys.modules.get("overrides")
    sys.modules["overrides"] = _MarkerOverrides("overrides")
    try:
        import lancedb  # noqa: F401
    finally:
        if saved is None:
            sys.modules.pop("overrides", None)
        else:
            sys.modules["overrides"] = saved
