"""Manifest repositories: where ``spec.repos[]`` point (local directory, archive, git), the cache under
APPDIR/.cache/repos/, the lock file beside the KfDef, and safe archive extraction.

This package resolves repos into local directory trees; it does not render, plan or apply, it never writes
the KfDef, and it writes nothing outside APPDIR/.cache/repos/ except the lock file (and that only through
:func:`kfctl.repos.cache.Resolution.write_lock`).
"""
