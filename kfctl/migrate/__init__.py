"""`kfctl migrate`: a kfctl v1.0 to v1.2 KfDef rewritten for the built-in catalog (tables in legacy.py)."""
