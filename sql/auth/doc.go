// Package auth holds what a SQL node needs to authenticate MySQL clients:
// account credentials and the two authentication plugins
// (mysql_native_password and caching_sha2_password), the per-node
// caching_sha2_password fast-path cache, the node's RSA key pair for
// password exchange on plain connections, and the node's TLS certificate
// (loaded from files, or self-signed and persisted on first start).
//
// Invariants: no plaintext password is kept. An account stores
// SHA1(SHA1(password)) for mysql_native_password and a salted PBKDF2-SHA256
// hash for caching_sha2_password; the fast-path cache holds
// SHA256(SHA256(password)) of accounts that completed a full
// authentication on this node since it started (as MySQL's cache), and is
// dropped entry by entry when an account changes. All types are safe for
// concurrent use.
package auth
