package txn

import (
	"context"
	"fmt"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn/memdb"
)

// Oracle hands out timestamps; *pdclient.Client satisfies it.
type Oracle interface {
	GetTS(ctx context.Context) (uint64, error)
}

// Config tunes transactions. Zero fields take their defaults.
type Config struct {
	// LockTTL is the TTL of a transaction's locks, refreshed by heartbeats
	// while it lives. Default 3s.
	LockTTL time.Duration
	// HeartbeatInterval is how often a transaction that holds locks
	// extends their TTL. Default LockTTL/3.
	HeartbeatInterval time.Duration
	// MaxTxnSize bounds the write buffer (keys + values) of one
	// transaction. Default 100 MiB.
	MaxTxnSize int
	// AsyncCommitMaxKeys: larger transactions use plain 2PC even when
	// async commit is allowed (the primary lock carries every key).
	// Default 256.
	AsyncCommitMaxKeys int
}

// Client begins transactions. It is safe for concurrent use.
type Client struct {
	kv       *kvclient.Client
	oracle   Oracle
	cfg      Config
	resolver *LockResolver
	active   activeTxns
}

// timedOracle counts every wait for a timestamp as the statement's TSO
// stage (execdetails).
type timedOracle struct{ Oracle }

func (o timedOracle) GetTS(ctx context.Context) (uint64, error) {
	start := time.Now()
	ts, err := o.Oracle.GetTS(ctx)
	execdetails.From(ctx).Since(execdetails.TSOWait, start)
	return ts, err
}

// NewClient returns a transaction client over kv and oracle.
func NewClient(kv *kvclient.Client, oracle Oracle, cfg Config) *Client {
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = 3 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = cfg.LockTTL / 3
	}
	if cfg.MaxTxnSize <= 0 {
		cfg.MaxTxnSize = 100 << 20
	}
	if cfg.AsyncCommitMaxKeys <= 0 {
		cfg.AsyncCommitMaxKeys = 256
	}
	oracle = timedOracle{oracle}
	return &Client{kv: kv, oracle: oracle, cfg: cfg, resolver: newLockResolver(kv, oracle)}
}

// Resolver is the client's lock resolver (shared by its transactions).
func (c *Client) Resolver() *LockResolver { return c.resolver }

// Begin starts a transaction: start_ts is opts.StartTS when set (a
// read-only snapshot), else a fresh timestamp.
func (c *Client) Begin(ctx context.Context, opts kv.TxnOptions) (*Txn, error) {
	ts := opts.StartTS
	if ts != 0 && !opts.ReadOnly {
		return nil, fmt.Errorf("kvclient/txn: a transaction reading at a given timestamp must be read-only")
	}
	if ts == 0 {
		var err error
		if ts, err = c.oracle.GetTS(ctx); err != nil {
			return nil, fmt.Errorf("kvclient/txn: begin: %w", mapErr(err))
		}
	}
	t := &Txn{
		c:           c,
		opts:        opts,
		startTS:     ts,
		forUpdateTS: ts,
		readTS:      ts,
		mem:         memdb.New(),
		stmtCP:      -1,
		began:       time.Now(),
	}
	c.active.add(ts)
	return t, nil
}
