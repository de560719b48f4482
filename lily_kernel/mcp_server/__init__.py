"""`lily mcp`: an MCP server over stdio or Streamable HTTP (`--http`), serving the
workspace's skills (SEP-2640) and Lily's tools under its policy. fastmcp is imported
only when it runs."""
