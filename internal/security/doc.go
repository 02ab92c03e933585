// Package security builds the TLS credentials every connection between
// Strata components uses when cluster TLS is configured (TiDB's [security]
// section: cluster-ssl-ca, cluster-ssl-cert, cluster-ssl-key,
// cluster-verify-cn), and guards PD's state-changing HTTP API.
//
// # Usage
//
//	t, err := security.New(security.Config{CA: ca, Cert: cert, Key: key}, "store")
//	grpc.NewServer(t.ServerOption(), ...)
//	grpc.NewClient(addr, t.DialOption(), ...)
//
// A nil *TLS (what New returns for an empty Config) is plaintext: every
// method works on it and gives the insecure equivalent, so callers plumb one
// pointer and never branch.
//
// # Invariants
//
//   - Mutual: servers require and verify a client certificate signed by the
//     CA (an HTTP API only asks for one: see HTTPServerConfig and Guard),
//     and clients verify the server's certificate against the CA and the
//     dialled host name or IP.
//   - Reload: the CA, certificate and key files are stat'ed at every
//     handshake and re-read when one's modification time or size changed, so
//     new connections use rotated files without a restart; established
//     connections keep theirs. A set of files that fails to load (a
//     certificate written before its key, say) is logged with the file and
//     the reason and the previous set stays in use until the files load.
//   - VerifyCN, when set, is checked by servers against the CommonName of
//     the client's certificate; clients do not check it.
//   - A *TLS is safe for concurrent use.
package security
