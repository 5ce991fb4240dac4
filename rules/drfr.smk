"""drfr stage."""
