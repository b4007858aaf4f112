"""The ratchet command, the examples and the deployment files, run as users run them."""
