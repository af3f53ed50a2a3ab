"""Sphinx configuration of udbench's documentation site (docs/site.md says how to build it).

The pages are the Markdown files of this folder (MyST, through myst-nb), the tutorial notebook
is executed at build time (myst-nb, jupyter-cache) and the API reference is generated from the
numpydoc docstrings (autodoc + numpydoc; one page per module, written at the start of a build).
``sphinx-build -W -n`` (as ``.ci/run`` runs it) turns every warning into an error: a link to a
missing page or anchor, an API entry naming an object that does not exist, a cross-reference
that resolves to nothing, a notebook cell that raises.
"""

from __future__ import annotations

import importlib
import os
import re
import warnings
from importlib.metadata import version as _version
from typing import Any

# numpydoc drops a section it does not know (with a UserWarning): fail the build instead
warnings.filterwarnings("error", message="Unknown section", category=UserWarning)

project = "udbench"
author = "The udbench developers"
copyright = "udbench developers, MIT licence"
release = _version("udbench")
version = release

extensions = [
    "myst_nb",  # Markdown (MyST) pages and executed notebooks
    "sphinx.ext.autodoc",
    "numpydoc",
]

# Sources: the Markdown pages and the notebook; nothing outside docs/ (the README is included)
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
root_doc = "index"

# MyST: `[text](page.md#anchor)` links are checked; headings get anchors down to level 3
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Notebooks: executed (cached between builds by jupyter-cache under the build folder) in a
# temporary folder; a cell that raises fails the build. UDBENCH_DOCS_EXECUTE=off skips it.
nb_execution_mode = os.environ.get("UDBENCH_DOCS_EXECUTE", "cache")
nb_execution_in_temp = True
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 1800
nb_merge_streams = True

# API reference: one page per module, written by _write_api_pages below
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc sections carry the types and shapes
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"udbench {release}"
html_theme_options = {
    "navigation_depth": 3,
    "show_toc_level": 2,
    "navbar_align": "left",
}
html_static_path: list[str] = []


# --- docstrings written for the terminal as much as for the site -------------------------------

_CODE = re.compile(r"(``.+?``|`[^`\n]+`)")


def _escape_bars(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Show ``|x|`` (absolute values in the docstrings) as written, not as a substitution.

    reStructuredText reads ``|name|`` as a substitution reference; the docstrings use bars for
    absolute values (``|y − μ|``). Bars outside code and outside table rows are escaped.
    """
    for i, line in enumerate(lines):
        if "|" not in line or line.lstrip().startswith(("| ", "+-", "+=")):  # tables, line blocks
            continue
        parts = _CODE.split(line)
        lines[i] = "".join(p if k % 2 else p.replace("|", r"\|") for k, p in enumerate(parts))


_MISSING = object()


def _import_path(path: str) -> Any:
    """The object a dotted path names (the longest importable prefix, then attributes).

    An attribute a class declares without a class-level value (a dataclass field, an
    annotated instance attribute) is found as the class itself: it is documented there.
    """
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for i, attr in enumerate(parts[cut:], start=cut):
            found = getattr(obj, attr, _MISSING)
            if found is _MISSING and isinstance(obj, type) and i == len(parts) - 1:
                return obj if attr in _declared(obj) else _MISSING
            if found is _MISSING:
                return _MISSING
            obj = found
        return obj
    return _MISSING


def _declared(cls: type) -> set[str]:
    """Attributes a class declares without (necessarily) a class-level value: annotations
    along its MRO, its constructor's parameters (stored unchanged, scikit-learn style) and
    the names of its docstring's Attributes section (instance attributes set in __init__)."""
    import inspect

    from numpydoc.docscrape import NumpyDocString

    names = {k for c in cls.__mro__ for k in getattr(c, "__annotations__", {})}
    try:
        names |= set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        pass
    for entry in NumpyDocString(inspect.getdoc(cls) or "")["Attributes"]:
        names |= {n.strip() for n in entry.name.split(",")}
    return names


def _home(obj: Any) -> str | None:
    """The module an object belongs to (None for plain values)."""
    if type(obj).__name__ == "module":
        return obj.__name__
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else None


def _documented_names(obj: Any, path: str, objects: dict[str, Any]) -> list[str]:
    """Documented entries that hold ``obj``: its own name, where it is defined, or the entry
    of that name whose value it is (constants)."""
    names = [path]
    if type(obj).__name__ == "module":
        names.append(obj.__name__)
    qualname = getattr(obj, "__qualname__", None)
    if _home(obj) and isinstance(qualname, str):
        names.append(f"{_home(obj)}.{qualname}")
    tail = path.rpartition(".")[2]
    for name in objects:
        if name.rpartition(".")[2] == tail and name not in names:
            owner, _, attr = name.rpartition(".")
            held = _import_path(owner)
            if held is not _MISSING and getattr(held, attr, _MISSING) is obj:
                names.append(name)
    return [n for n in names if n in objects]


def _resolve_python_names(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a Python cross-reference the way Python resolves the name.

    The docstrings write names as the code where they stand sees them: ``:func:`fit_kernel```
    in a module that imports it, ``:class:`udbench.methods.BaseMethod``` for a re-export. Sphinx
    only looks for a documented entry of that exact name; this looks the name up in the class
    and module the docstring belongs to, then as a dotted import path, and links the documented
    entry of the object found. A name no namespace holds (imported only for type checking, or
    in a function) links the one documented entry of that name, if there is exactly one.
    Shown as code without a link, once Python has found the object: another project's object
    (the build is offline, no intersphinx inventories) and a private one (``_seed``: not in
    the reference). Anything else stays unresolved, and the strict build fails on it.
    """
    from sphinx.util.nodes import make_refnode

    if node.get("refdomain") != "py":
        return None
    target = "".join(node["reftarget"].split()).lstrip(".~")  # a role may wrap a line
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [f"{module}.{cls}.{target}"] if module and cls else []
    candidates += [f"{module}.{target}"] if module else []
    candidates.append(target)
    domain = env.get_domain("py")

    def link(name: str) -> Any:
        entry = domain.objects[name]
        return make_refnode(
            app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name
        )

    for path in candidates:
        obj = _import_path(path)
        if obj is _MISSING:
            continue
        home = _home(obj)
        if home is not None and home.partition(".")[0] != "udbench":
            return contnode
        names = _documented_names(obj, path, domain.objects)
        if names:
            return link(names[0])
        owner = _import_path(path.rpartition(".")[0]) if "." in path else _MISSING
        if isinstance(owner, type):  # an attribute documented in its class's docstring
            names = _documented_names(owner, path.rpartition(".")[0], domain.objects)
            if names:
                return link(names[0])
        if any(part.startswith("_") for part in path.split(".")[1:]):
            return contnode
        return None
    # no namespace holds the name: the one documented entry that ends with it, if unique
    same = [n for n in domain.objects if n == target or n.endswith("." + target)]
    if len(same) == 1:
        return link(same[0])
    head, _, attr = target.rpartition(".")
    if head and not same:  # Owner.attribute: the one documented Owner that declares it
        owners = [n for n in domain.objects if n == head or n.endswith("." + head)]
        if len(owners) == 1:
            cls = _import_path(owners[0])
            if isinstance(cls, type) and (hasattr(cls, attr) or attr in _declared(cls)):
                return link(owners[0])
    return None


def _api_page(name: str, children: list[str]) -> str:
    """reStructuredText of one module's API page."""
    title = f"``{name}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {name}"]
    if children:  # a package: its docstring, then its modules (each object on its own page)
        lines += ["   :no-members:", "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {child}" for child in children]
    else:  # every public name the module defines, whatever its __all__ re-exports
        lines += ["   :ignore-module-all:"]
    return "\n".join(lines) + "\n"


def _write_api_pages(app: Any) -> None:
    """Write ``api/generated/<module>.rst`` for every module of udbench (changed ones only).

    Private modules are included: the public ones refer to them (seeds, errors, threads). A
    page is rewritten only when its text changes, so ``sphinx-autobuild`` does not loop.
    """
    import pkgutil
    from pathlib import Path

    import udbench

    out = Path(app.srcdir) / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(m.name for m in pkgutil.walk_packages(udbench.__path__, "udbench."))
    wanted = set()
    for name in names:
        depth = name.count(".")
        children = [n for n in names if n.startswith(name + ".") and n.count(".") == depth + 1]
        page = out / f"{name}.rst"
        text = _api_page(name, children)
        wanted.add(page.name)
        if not page.is_file() or page.read_text() != text:
            page.write_text(text)
    for old in out.glob("*.rst"):
        if old.name not in wanted:  # a module that is gone
            old.unlink()


def _skip_metadata_routing(
    app: Any, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """Leave out scikit-learn's generated metadata-routing setters (``set_fit_request``, …):
    not udbench's API, and their docstrings refer to scikit-learn's own glossary."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app: Any) -> None:
    """Connect the API-page writer and the docstring and cross-reference hooks above."""
    app.connect("builder-inited", _write_api_pages)
    app.connect("autodoc-process-docstring", _escape_bars, priority=100)
    app.connect("missing-reference", _resolve_python_names)
    app.connect("autodoc-skip-member", _skip_metadata_routing)
