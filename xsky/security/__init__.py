"""Policy: roles, permission rules, the shell parser, network addresses, redaction, the tool registry."""
