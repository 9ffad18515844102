// Package agentfs is the AgentFS provider: the agent runs in bwrap's
// sandbox, but its /work is a FUSE file system that git-lease serves from
// an AgentFS database (schema 0.4, written through AgentFS's own Go SDK)
// over the exported base, which it never writes. The database is the only
// writable layer; collection reads the delta from it, not from a directory,
// and the database is kept past cleanup. The package also reads delta
// databases that AgentFS made elsewhere (git lease import --agentfs).
package agentfs
