"""The agent-side SDK without a server: tools, models against local provider servers,
state, compaction, interceptors."""
