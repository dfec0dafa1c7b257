"""The built-in catalog: components (manifests/), overlays (overlays/) and platforms (platforms/).

Read-only metadata about what kfctl can install. See docs/catalog.md for the on-disk format.
"""
