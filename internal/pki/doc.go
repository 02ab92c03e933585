// Package pki issues the certificates of cluster TLS for tests and for
// `make certs` (cmd/certgen): a self-signed CA and certificates it signs,
// each valid as a server and as a client certificate for the host names
// and IP addresses given. Keys are ECDSA P-256. Nothing here is meant to
// replace an operator's own PKI.
package pki
