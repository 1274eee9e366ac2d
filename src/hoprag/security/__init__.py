"""What a caller may see and what leaves hoprag: one module per promise (clearance, redaction)."""
