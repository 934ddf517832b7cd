// Package tenant holds the tenants that may use a bulkhead server: who they
// are (an id and the SHA-256 hashes of their API keys), how much they may use
// (concurrent requests and tokens per minute), and the salt that scopes their
// prefix-cache entries (DESIGN I6).
//
// Tenants come from a TOML file:
//
//	[[tenant]]
//	id = "acme"
//	api_key_sha256 = ["<64 hex digits>"]   # sha256 of the key, never the key
//	max_concurrent = 8                      # 0: unlimited
//	tokens_per_minute = 100000              # 0: unlimited
//	cache_salt = "optional"                 # default: derived from the id
//
// Without a file the server runs one anonymous tenant that accepts any key.
// Keys are compared as hashes in constant time, and every tenant's hashes are
// compared on every attempt, so timing reveals neither which tenant a key
// belongs to nor how much of a hash matched.
package tenant
