"""The command line: the one layer that prints and the one place that catches KfctlError."""
