"""Per-install Secrets: generated in the cluster at the first apply, never written to a file.

A catalog component declares the Secrets it needs (``secrets:`` in its component.yaml) with how each key is
made, instead of shipping values. The bundle plans each as an object without data (:mod:`.declared`); before
anything is applied, :mod:`.values` reads what the cluster holds and draws the keys it lacks, in memory only;
:mod:`.brought` checks the Secrets a KfDef brings instead (a component's ``…SecretRef`` parameter); and
:mod:`.report` describes them for status and diff by their keys, never their values. Values never reach an
event, a log line, an error message or a file.
"""
