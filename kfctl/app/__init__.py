"""Use cases behind the commands (init, generate, …): they return results and never print."""
