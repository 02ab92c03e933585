package domain

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/autoid"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/infoschema"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/statistics"
)

// Config configures a Domain.
type Config struct {
	// Store is the cluster (production: kvclient/txn.Storage).
	Store kv.Storage
	// Addr is this node's MySQL address, published while it is DDL owner.
	Addr string
	// SchemaLease is the schema lease (catalog.DefaultLease when zero).
	SchemaLease time.Duration
	// StatsLease is how often the node flushes its modify counts, reloads
	// statistics and (as DDL owner) looks for tables to auto-analyze
	// (DefaultStatsLease when zero).
	StatsLease time.Duration
	// NoAutoAnalyze: this node never runs auto-analyze, even as DDL owner.
	NoAutoAnalyze bool
	// PessimisticAutoCommit: an autocommit INSERT, UPDATE or DELETE in
	// pessimistic mode takes its row locks before committing, as a
	// statement of an explicit transaction does (TiDB's
	// pessimistic-txn.pessimistic-auto-commit). Off (the default, as in
	// TiDB), it first runs optimistically (sql/session retry.go).
	PessimisticAutoCommit bool
	// Privilege configures the privilege manager; its Store is Store.
	Privilege privilege.Config
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultStatsLease is how often a SQL node checks whether another node's
// ANALYZE changed table statistics (TiDB's stats-lease, 3 s).
const DefaultStatsLease = 3 * time.Second

// Domain is one SQL node's shared state: what every session of the node
// reads and nothing a session owns. Its parts are safe for concurrent use.
type Domain struct {
	cfg     Config
	store   kv.Storage
	catalog *catalog.Catalog
	ddl     *ddl.DDL
	stats   *statistics.Handle
	ids     *autoid.IDAllocator
	autoInc *autoid.AutoIncAllocator
	is      *infoschema.Schema
	priv    *privilege.Manager
}

// New builds the node's domain over cfg.Store; call Start to start its
// background work. Nothing is read from the cluster until then.
func New(cfg Config) *Domain {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cat := catalog.New(cfg.Store)
	cat.SetLogger(log.With("component", "catalog"))
	if cfg.SchemaLease > 0 {
		cat.SetLease(cfg.SchemaLease)
	}
	d := &Domain{
		cfg:     cfg,
		store:   cfg.Store,
		catalog: cat,
		ddl:     ddl.New(ddl.Config{Store: cfg.Store, Catalog: cat, Addr: cfg.Addr, SchemaLease: cfg.SchemaLease, Logger: log}),
		stats:   statistics.NewHandle(cfg.Store, slog.Default().With("component", "stats")),
		ids:     autoid.NewIDAllocator(cfg.Store),
		autoInc: autoid.NewAutoIncAllocator(cfg.Store),
	}
	d.is = infoschema.New(cat, d.autoInc.Peek)
	pc := cfg.Privilege
	pc.Store = cfg.Store
	if pc.Logger == nil {
		pc.Logger = log
	}
	d.priv = privilege.NewManager(pc)
	return d
}

// Store is the cluster the node reads and writes.
func (d *Domain) Store() kv.Storage { return d.store }

// Catalog is the node's schema cache.
func (d *Domain) Catalog() *catalog.Catalog { return d.catalog }

// DDL submits schema changes to the cluster's job queue and, while this
// node is the DDL owner, runs them.
func (d *Domain) DDL() *ddl.DDL { return d.ddl }

// Stats serves table statistics to the planner and counts modified rows.
func (d *Domain) Stats() *statistics.Handle { return d.stats }

// IDs allocates row handles.
func (d *Domain) IDs() *autoid.IDAllocator { return d.ids }

// AutoInc allocates AUTO_INCREMENT values.
func (d *Domain) AutoInc() *autoid.AutoIncAllocator { return d.autoInc }

// InfoSchema serves information_schema.
func (d *Domain) InfoSchema() *infoschema.Schema { return d.is }

// Privileges is the node's view of users and grants.
func (d *Domain) Privileges() *privilege.Manager { return d.priv }

// Start starts the domain's background work, which runs until ctx ends:
// the schema version keeper, the privilege poller, DDL owner election with
// the job worker, and the statistics loop (modify counts, other nodes'
// ANALYZE, auto-analyze while this node is DDL owner). Every goroutine is
// running when Start returns; wait blocks until all have stopped.
func (d *Domain) Start(ctx context.Context) (wait func()) {
	keepDone, privDone, ddlDone, statsDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { defer close(keepDone); d.catalog.Keep(ctx) }()
	go func() { defer close(privDone); d.priv.Run(ctx) }()
	go func() { defer close(ddlDone); d.ddl.Run(ctx) }()
	go func() {
		defer close(statsDone)
		d.stats.Run(ctx, cmp.Or(d.cfg.StatsLease, DefaultStatsLease), d.catalog, d.autoAnalyzeOwner)
	}()
	return func() { <-keepDone; <-privDone; <-ddlDone; <-statsDone }
}

// autoAnalyzeOwner: this node runs auto-analyze now (the DDL owner, unless
// configured not to).
// PessimisticAutoCommit reports Config.PessimisticAutoCommit.
func (d *Domain) PessimisticAutoCommit() bool { return d.cfg.PessimisticAutoCommit }

func (d *Domain) autoAnalyzeOwner() bool { return !d.cfg.NoAutoAnalyze && d.ddl.IsOwner() }
