"""Rendering: the generated kustomize directories and the one wrapper around the kustomize binary.

Only this package runs subprocesses.
"""
