"""`kfctl check`: named checks grouped by category, each a function that returns a verdict with a hint."""
