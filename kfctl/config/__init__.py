"""The KfDef: its model, and the loader that validates a file and reports every problem at once."""
