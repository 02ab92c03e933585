package security

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Credentials is the client side of gRPC connections to other components:
// mutual TLS with the current files, or plaintext for a nil t.
func (t *TLS) Credentials() credentials.TransportCredentials {
	if t == nil {
		return insecure.NewCredentials()
	}
	return &clientCreds{TransportCredentials: credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}), t: t}
}

// DialOption is grpc.WithTransportCredentials(t.Credentials()).
func (t *TLS) DialOption() grpc.DialOption {
	return grpc.WithTransportCredentials(t.Credentials())
}

// ServerOption makes a gRPC server require mutual TLS with the current
// files; for a nil t it is a no-op (plaintext).
func (t *TLS) ServerOption() grpc.ServerOption {
	if t == nil {
		return grpc.EmptyServerOption{}
	}
	return grpc.Creds(&serverCreds{TransportCredentials: credentials.NewTLS(t.ServerConfig()), component: t.component})
}

// clientCreds builds each handshake's configuration from the current files
// (credentials.NewTLS would fix the CA pool) and counts failures
// (strata_tls_handshake_failures_total).
type clientCreds struct {
	credentials.TransportCredentials // for Info
	t                                *TLS
}

func (c *clientCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		host = authority
	}
	conn, info, err := credentials.NewTLS(c.t.ClientConfig(host)).ClientHandshake(ctx, authority, raw)
	if err != nil {
		handshakeFailures.WithLabelValues(c.t.component, "client").Inc()
		err = fmt.Errorf("cluster TLS handshake with %s: %w", authority, err)
	}
	return conn, info, err
}

func (c *clientCreds) Clone() credentials.TransportCredentials {
	return &clientCreds{TransportCredentials: c.TransportCredentials.Clone(), t: c.t}
}

// serverCreds counts failed server handshakes.
type serverCreds struct {
	credentials.TransportCredentials
	component string
}

func (c *serverCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		handshakeFailures.WithLabelValues(c.component, "server").Inc()
	}
	return conn, info, err
}

func (c *serverCreds) Clone() credentials.TransportCredentials {
	return &serverCreds{TransportCredentials: c.TransportCredentials.Clone(), component: c.component}
}
