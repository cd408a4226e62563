"""Diagnosis -> text. Renderers do no I/O; the CLI and the web app print or serve what they return."""
