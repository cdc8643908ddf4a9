"""The live cluster side: ``schedstream watch`` (API server -> events topic)."""
