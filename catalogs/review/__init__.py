"""The registry's review app: contributions, the review conversation, trial runs in the sandbox."""
