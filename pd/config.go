package pd

import (
	"fmt"
	"net/url"
	"time"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/pd/schedule"
)

// Config configures one PD member.
type Config struct {
	// Name is this member's unique name in the etcd cluster.
	Name string
	// DataDir holds the embedded etcd data.
	DataDir string
	// Addr is the PD gRPC listen address ("host:port"; port 0 picks one).
	Addr string
	// AdvertiseAddr is the gRPC address other processes should dial; empty
	// means the bound listen address.
	AdvertiseAddr string
	// PeerURL is the etcd peer URL advertised to the other members (and
	// listened on unless ListenPeerURL is set).
	PeerURL string
	// ClientURL is the etcd client URL advertised (and listened on unless
	// ListenClientURL is set).
	ClientURL string
	// ListenPeerURL and ListenClientURL are the URLs etcd binds; empty means
	// PeerURL / ClientURL. etcd binds IP addresses only, so a member that
	// advertises a host name (a container's service name) listens on e.g.
	// "http://0.0.0.0:2380".
	ListenPeerURL   string
	ListenClientURL string
	// InitialCluster is the etcd initial cluster, "name=peerURL,...";
	// empty means "<Name>=<PeerURL>".
	InitialCluster string
	// InitialClusterState is "new" (default) or "existing".
	InitialClusterState string
	// Replicas is how many stores the first region is placed on; bootstrap
	// waits until that many stores are registered.
	Replicas int
	// LeaderLease is the TTL of the PD leader's etcd session (default 3s).
	LeaderLease time.Duration
	// TSOWindow is how far ahead the TSO bound is persisted (default 3s).
	TSOWindow time.Duration
	// EtcdTick is the embedded etcd's raft tick (default 100ms); the election
	// timeout is 10 ticks. Tests shorten it.
	EtcdTick time.Duration
	// EtcdLogLevel is the embedded etcd's zap level (default "warn").
	EtcdLogLevel string
	// StatusAddr is the "host:port" where this member serves its HTTP API,
	// published in etcd so that a follower forwards API requests to the
	// leader (empty: not published; Server.SetStatusAddr sets it once the
	// status port is bound).
	StatusAddr string
	// Schedule is the scheduling configuration used until one is set
	// through the HTTP API (which persists it in etcd and wins).
	Schedule schedule.Config
	// Security, when set, is cluster TLS: the gRPC service requires client
	// certificates, the embedded etcd's peer and client URLs (which must
	// then be https) use the same files, and the HTTP API is served over
	// TLS by the caller (status.Serve) and forwarded to the leader over it.
	// Nil is plaintext.
	Security *security.TLS
	// HTTPTokenFile holds the bearer token the HTTP API's state-changing
	// requests may carry instead of a client certificate (see
	// security.Guard; empty: none).
	HTTPTokenFile string
}

func (c *Config) setDefaults() {
	if c.Name == "" {
		c.Name = "pd"
	}
	if c.InitialCluster == "" {
		c.InitialCluster = c.Name + "=" + c.PeerURL
	}
	if c.InitialClusterState == "" {
		c.InitialClusterState = "new"
	}
	if c.ListenPeerURL == "" {
		c.ListenPeerURL = c.PeerURL
	}
	if c.ListenClientURL == "" {
		c.ListenClientURL = c.ClientURL
	}
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.LeaderLease == 0 {
		c.LeaderLease = 3 * time.Second
	}
	if c.TSOWindow == 0 {
		c.TSOWindow = 3 * time.Second
	}
	if c.EtcdLogLevel == "" {
		c.EtcdLogLevel = "warn"
	}
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	c.setDefaults()
	if c.DataDir == "" {
		return fmt.Errorf("%w: data dir is required", ErrBadConfig)
	}
	if c.Addr == "" {
		return fmt.Errorf("%w: addr is required", ErrBadConfig)
	}
	for _, u := range []struct{ name, v string }{
		{"peer url", c.PeerURL}, {"etcd client url", c.ClientURL},
		{"listen peer url", c.ListenPeerURL}, {"listen etcd client url", c.ListenClientURL},
	} {
		p, err := url.Parse(u.v)
		if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
			return fmt.Errorf("%w: %s %q must be an http(s) URL", ErrBadConfig, u.name, u.v)
		}
	}
	if c.Security != nil {
		for _, u := range []struct{ name, v string }{
			{"peer url", c.PeerURL}, {"etcd client url", c.ClientURL},
			{"listen peer url", c.ListenPeerURL}, {"listen etcd client url", c.ListenClientURL},
		} {
			if p, _ := url.Parse(u.v); p.Scheme != "https" {
				return fmt.Errorf("%w: with cluster TLS the %s must be https://, got %q (and so must every URL in the initial cluster)", ErrBadConfig, u.name, u.v)
			}
		}
	}
	if c.Replicas < 1 {
		return fmt.Errorf("%w: replicas must be >= 1, got %d", ErrBadConfig, c.Replicas)
	}
	if err := c.Schedule.Defaults().Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if c.InitialClusterState != "new" && c.InitialClusterState != "existing" {
		return fmt.Errorf("%w: initial cluster state %q", ErrBadConfig, c.InitialClusterState)
	}
	if c.LeaderLease < time.Second {
		return fmt.Errorf("%w: leader lease must be >= 1s", ErrBadConfig)
	}
	return nil
}

// etcdURLs returns the parsed listen and advertise URLs of the embedded etcd.
func (c *Config) etcdURLs() (listenPeer, advPeer, listenClient, advClient url.URL, err error) {
	for _, u := range []struct {
		dst  *url.URL
		name string
		v    string
	}{
		{&listenPeer, "listen peer url", c.ListenPeerURL}, {&advPeer, "peer url", c.PeerURL},
		{&listenClient, "listen etcd client url", c.ListenClientURL}, {&advClient, "etcd client url", c.ClientURL},
	} {
		p, perr := url.Parse(u.v)
		if perr != nil {
			err = fmt.Errorf("%w: %s: %v", ErrBadConfig, u.name, perr)
			return
		}
		*u.dst = *p
	}
	return
}
