package privilege

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/tablecodec"
)

// DefaultPollInterval is how often a SQL node checks the privilege
// version by default.
const DefaultPollInterval = 500 * time.Millisecond

// Config configures a Manager.
type Config struct {
	Store kv.Storage
	// DefaultPlugin is the plugin of CREATE USER without IDENTIFIED WITH
	// (default_authentication_plugin) and of the bootstrap accounts.
	DefaultPlugin string
	// Bootstrap maps the user names created at '%' with ALL PRIVILEGES
	// WITH GRANT OPTION on a fresh cluster to their initial passwords.
	// Nil means {"root": ""}.
	Bootstrap map[string]string
	// SkipGrantTables lets every login in and every statement through.
	SkipGrantTables bool
	// PollInterval between version checks (0: DefaultPollInterval).
	PollInterval time.Duration
	Logger       *slog.Logger
}

// Manager is a SQL node's view of the privilege tables. Safe for
// concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger
	cur atomic.Pointer[Snapshot]

	refreshMu sync.Mutex // one version read at a time; waiters share it
	lastOK    time.Time  // start of the last successful version read
}

// NewManager returns a Manager; nothing is loaded until Refresh or Run.
func NewManager(cfg Config) *Manager {
	if cfg.DefaultPlugin == "" {
		cfg.DefaultPlugin = auth.NativePassword
	}
	if cfg.Bootstrap == nil {
		cfg.Bootstrap = map[string]string{"root": ""}
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Manager{cfg: cfg, log: log.With("component", "privilege")}
}

// DefaultPlugin is default_authentication_plugin.
func (m *Manager) DefaultPlugin() string { return m.cfg.DefaultPlugin }

// Snapshot returns the current snapshot, nil before the first load.
func (m *Manager) Snapshot() *Snapshot { return m.cur.Load() }

// Run checks the version every PollInterval until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.PollInterval)
	defer t.Stop()
	failing := false
	for {
		_, err := m.Refresh(ctx)
		if err != nil && ctx.Err() == nil && !failing {
			m.log.Warn("cannot read the privilege tables; using the last loaded version", "err", err)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads the version and reloads the tables when it changed
// (bootstrapping them on a fresh cluster). Callers arriving while a read
// runs wait for the next one; a read that started after the caller arrived
// answers for it.
func (m *Manager) Refresh(ctx context.Context) (*Snapshot, error) {
	arrived := time.Now()
	m.refreshMu.Lock()
	defer m.refreshMu.Unlock()
	if m.lastOK.After(arrived) {
		return m.cur.Load(), nil
	}
	started := time.Now()
	snap, err := m.load(ctx)
	if err != nil {
		if cur := m.cur.Load(); cur != nil {
			return cur, err
		}
		return nil, err
	}
	m.lastOK = started
	return snap, nil
}

func decodeVersion(v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("privilege: corrupt version (%d bytes)", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// load reads the version at a fresh timestamp and, when it differs from the
// current snapshot's, every row at the same timestamp. Called with
// refreshMu held.
func (m *Manager) load(ctx context.Context) (*Snapshot, error) {
	for range 5 {
		ts, err := m.cfg.Store.GetTS(ctx)
		if err != nil {
			return nil, fmt.Errorf("privilege: get ts: %w", err)
		}
		v, found, err := kv.GetAt(ctx, m.cfg.Store, versionKey, ts)
		if err != nil {
			return nil, fmt.Errorf("privilege: read version: %w", err)
		}
		if !found {
			if err := m.bootstrap(ctx); err != nil {
				return nil, err
			}
			continue
		}
		ver, err := decodeVersion(v)
		if err != nil {
			return nil, err
		}
		if cur := m.cur.Load(); cur != nil && cur.Version == ver {
			return cur, nil
		}
		p := privPrefix()
		pairs, err := kv.ScanAt(ctx, m.cfg.Store, p, tablecodec.PrefixNext(p), ts, 0)
		if err != nil {
			return nil, fmt.Errorf("privilege: read tables: %w", err)
		}
		g := newGrants()
		for _, kv := range pairs {
			if err := g.decodeRow(kv.Key, kv.Value); err != nil {
				return nil, err
			}
		}
		return m.publish(ver, g), nil
	}
	return nil, errors.New("privilege: tables not bootstrapped after 5 attempts")
}

// publish installs a snapshot unless a newer one is already there.
func (m *Manager) publish(ver uint64, g *Grants) *Snapshot {
	snap := buildSnapshot(ver, g)
	snap.skip = m.cfg.SkipGrantTables
	for {
		cur := m.cur.Load()
		if cur != nil && cur.Version >= ver {
			return cur
		}
		if m.cur.CompareAndSwap(cur, snap) {
			if cur != nil {
				m.log.Debug("privileges reloaded", "version", ver)
			}
			return snap
		}
	}
}

// bootstrap creates the privilege tables with the bootstrap accounts; a
// concurrent bootstrap by another node wins or loses on the version key.
func (m *Manager) bootstrap(ctx context.Context) error {
	g := newGrants()
	for name, pw := range m.cfg.Bootstrap {
		as, err := auth.HashPassword(m.cfg.DefaultPlugin, pw)
		if err != nil {
			return err
		}
		g.Users[NewIdent(name, "%")] = &UserRecord{User: name, Host: "%", Plugin: m.cfg.DefaultPlugin, AuthString: as,
			Privs: GlobalPrivs | mysql.GrantPriv}
	}
	rows, err := g.encode()
	if err != nil {
		return err
	}
	txn, err := m.cfg.Store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return fmt.Errorf("privilege: bootstrap: %w", err)
	}
	ver := binary.BigEndian.AppendUint64(nil, 1)
	if err := txn.Insert(versionKey, ver); err != nil {
		_ = txn.Rollback(ctx)
		return err
	}
	for k, v := range rows {
		if err := txn.Set([]byte(k), v); err != nil {
			_ = txn.Rollback(ctx)
			return err
		}
	}
	err = txn.Commit(ctx)
	var ke *kv.KeyExistsError
	var wc *kv.WriteConflictError
	if errors.As(err, &ke) || errors.As(err, &wc) {
		return nil // another node bootstrapped
	}
	if err != nil {
		return fmt.Errorf("privilege: bootstrap: %w", err)
	}
	m.log.Info("privilege tables bootstrapped", "accounts", len(m.cfg.Bootstrap))
	return nil
}

// ErrConflict is returned when a change kept conflicting with concurrent
// changes.
var ErrConflict = errors.New("privilege: concurrent privilege changes kept conflicting; run the statement again")

// update runs fn on the current tables in one transaction, writes what fn
// changed and the next version, and publishes the result. fn may run more
// than once (write conflicts are retried); it must not keep g.
func (m *Manager) update(ctx context.Context, fn func(g *Grants) error) error {
	for range 10 {
		if _, err := m.Refresh(ctx); err != nil { // bootstraps when needed
			return err
		}
		err := m.tryUpdate(ctx, fn)
		var wc *kv.WriteConflictError
		if errors.As(err, &wc) {
			continue
		}
		return err
	}
	return ErrConflict
}

func (m *Manager) tryUpdate(ctx context.Context, fn func(g *Grants) error) (err error) {
	txn, err := m.cfg.Store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = txn.Rollback(context.WithoutCancel(ctx))
		}
	}()
	v, found, err := txn.Get(ctx, versionKey)
	if err != nil {
		return err
	}
	if !found {
		return errors.New("privilege: tables not bootstrapped")
	}
	ver, err := decodeVersion(v)
	if err != nil {
		return err
	}
	p := privPrefix()
	pairs, err := txn.Scan(ctx, p, tablecodec.PrefixNext(p), 0, false)
	if err != nil {
		return err
	}
	g := newGrants()
	old := make(map[string][]byte, len(pairs))
	for _, kv := range pairs {
		if err := g.decodeRow(kv.Key, kv.Value); err != nil {
			return err
		}
		old[string(kv.Key)] = kv.Value
	}
	if err := fn(g); err != nil {
		return err
	}
	rows, err := g.encode()
	if err != nil {
		return err
	}
	for k, v := range rows {
		if ov, ok := old[k]; !ok || string(ov) != string(v) {
			if err := txn.Set([]byte(k), v); err != nil {
				return err
			}
		}
	}
	for k := range old {
		if _, ok := rows[k]; !ok {
			if err := txn.Delete([]byte(k)); err != nil {
				return err
			}
		}
	}
	if err := txn.Set(versionKey, binary.BigEndian.AppendUint64(nil, ver+1)); err != nil {
		return err
	}
	if err := txn.Commit(ctx); err != nil {
		return err
	}
	m.publish(ver+1, g)
	return nil
}
