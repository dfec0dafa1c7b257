"""Readiness rules: one small pure function per kind, answering "healthy yet? failed? why not?".

Functions take the live object (and, where a verdict needs it, one extra fact passed by keyword) and
return a :class:`~kfctl.health.model.Health` whose message is written for a person. They never call the
API server: the engine fetches and passes what they need, which keeps every rule testable from YAML.
"""
