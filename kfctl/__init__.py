"""kfctl: install a machine-learning platform on Kubernetes from one declarative KfDef file."""

__version__ = "0.1.0"
