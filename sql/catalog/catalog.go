package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql"
	"github.com/stratadb/strata/sql/errno"
)

// CacheTTL bounds how long a cached entry is trusted without a reload.
const CacheTTL = 5 * time.Second

// Catalog is the cached, KV-backed schema. Safe for concurrent use.
type Catalog struct {
	store sql.Storage
	now   func() time.Time

	mu     sync.RWMutex
	dbs    map[string]cachedDB
	tables map[tableName]cachedTable
}

type cachedDB struct {
	info   *DBInfo
	loaded time.Time
}

type cachedTable struct {
	info   *TableInfo
	loaded time.Time
}

type tableName struct {
	dbID int64
	name string
}

// New returns a Catalog over store.
func New(store sql.Storage) *Catalog {
	return &Catalog{store: store, now: time.Now, dbs: map[string]cachedDB{}, tables: map[tableName]cachedTable{}}
}

func metaPrefix(kind string) []byte {
	return codec.EncodeBytes([]byte{tablecodec.MetaPrefix}, []byte(kind))
}

func dbKey(name string) []byte {
	return codec.EncodeBytes(metaPrefix("DB"), []byte(strings.ToLower(name)))
}

func tablePrefix(dbID int64) []byte {
	return codec.EncodeInt(metaPrefix("TBL"), dbID)
}

func tableKey(dbID int64, name string) []byte {
	return codec.EncodeBytes(tablePrefix(dbID), []byte(strings.ToLower(name)))
}

func (c *Catalog) read(ctx context.Context, key []byte) ([]byte, bool, error) {
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: get ts: %w", err)
	}
	v, ok, err := c.store.Get(ctx, key, ts)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: read %q: %w", key, err)
	}
	return v, ok, nil
}

func (c *Catalog) write(ctx context.Context, muts []*kvrpcpb.Mutation) error {
	start, err := c.store.GetTS(ctx)
	if err != nil {
		return fmt.Errorf("catalog: get start ts: %w", err)
	}
	commit, err := c.store.GetTS(ctx)
	if err != nil {
		return fmt.Errorf("catalog: get commit ts: %w", err)
	}
	return c.store.Commit(ctx, muts, start, commit)
}

// GetDB returns the named database, or ERROR 1049.
func (c *Catalog) GetDB(ctx context.Context, name string) (*DBInfo, error) {
	lname := strings.ToLower(name)
	c.mu.RLock()
	e, ok := c.dbs[lname]
	c.mu.RUnlock()
	if ok && c.now().Sub(e.loaded) < CacheTTL {
		return e.info, nil
	}
	v, found, err := c.read(ctx, dbKey(name))
	if err != nil {
		return nil, err
	}
	if !found {
		c.mu.Lock()
		delete(c.dbs, lname)
		c.mu.Unlock()
		return nil, errno.New(errno.ErrBadDB, "Unknown database '%s'", name)
	}
	db := new(DBInfo)
	if err := json.Unmarshal(v, db); err != nil {
		return nil, fmt.Errorf("catalog: corrupt database info %q: %w", name, err)
	}
	c.mu.Lock()
	c.dbs[lname] = cachedDB{info: db, loaded: c.now()}
	c.mu.Unlock()
	return db, nil
}

// ListDBs returns every database, sorted by name.
func (c *Catalog) ListDBs(ctx context.Context) ([]*DBInfo, error) {
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	p := metaPrefix("DB")
	pairs, err := c.store.Scan(ctx, p, tablecodec.PrefixNext(p), ts, 0)
	if err != nil {
		return nil, fmt.Errorf("catalog: list databases: %w", err)
	}
	out := make([]*DBInfo, 0, len(pairs))
	for _, kv := range pairs {
		db := new(DBInfo)
		if err := json.Unmarshal(kv.Value, db); err != nil {
			return nil, fmt.Errorf("catalog: corrupt database info: %w", err)
		}
		out = append(out, db)
	}
	return out, nil
}

// CreateDB creates a database; ERROR 1007 if it exists (unless ifNotExists).
func (c *Catalog) CreateDB(ctx context.Context, name string, ifNotExists bool) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "/\\.") {
		return errno.New(errno.ErrWrongDBName, "Incorrect database name '%s'", name)
	}
	id, err := c.store.AllocID(ctx, 1)
	if err != nil {
		return fmt.Errorf("catalog: alloc database id: %w", err)
	}
	db := &DBInfo{ID: int64(id), Name: name}
	v, _ := json.Marshal(db)
	err = c.write(ctx, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: dbKey(name), Value: v}})
	var ke *sql.KeyExistsError
	if errors.As(err, &ke) {
		if ifNotExists {
			return nil
		}
		return errno.New(errno.ErrDBCreateExists, "Can't create database '%s'; database exists", name)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.dbs[strings.ToLower(name)] = cachedDB{info: db, loaded: c.now()}
	c.mu.Unlock()
	return nil
}

// DropDB drops a database and its tables' catalog entries; ERROR 1008 if it
// does not exist (unless ifExists). Row data of the dropped tables is left
// for a future GC (ids are never reused, so it is unreachable).
func (c *Catalog) DropDB(ctx context.Context, name string, ifExists bool) error {
	db, err := c.GetDB(ctx, name)
	if err != nil {
		var e *errno.Error
		if errors.As(err, &e) && e.Code == errno.ErrBadDB {
			if ifExists {
				return nil
			}
			return errno.New(errno.ErrDBDropExists, "Can't drop database '%s'; database doesn't exist", name)
		}
		return err
	}
	tables, err := c.ListTables(ctx, db)
	if err != nil {
		return err
	}
	muts := []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Del, Key: dbKey(name)}}
	for _, t := range tables {
		muts = append(muts, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Del, Key: tableKey(db.ID, t.Name)})
	}
	if err := c.write(ctx, muts); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.dbs, strings.ToLower(name))
	for k := range c.tables {
		if k.dbID == db.ID {
			delete(c.tables, k)
		}
	}
	c.mu.Unlock()
	return nil
}

// GetTable returns the named table, or ERROR 1146.
func (c *Catalog) GetTable(ctx context.Context, db *DBInfo, name string) (*TableInfo, error) {
	k := tableName{dbID: db.ID, name: strings.ToLower(name)}
	c.mu.RLock()
	e, ok := c.tables[k]
	c.mu.RUnlock()
	if ok && c.now().Sub(e.loaded) < CacheTTL {
		return e.info, nil
	}
	v, found, err := c.read(ctx, tableKey(db.ID, name))
	if err != nil {
		return nil, err
	}
	if !found {
		c.mu.Lock()
		delete(c.tables, k)
		c.mu.Unlock()
		return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, name)
	}
	t, err := decodeTable(v)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tables[k] = cachedTable{info: t, loaded: c.now()}
	c.mu.Unlock()
	return t, nil
}

func decodeTable(v []byte) (*TableInfo, error) {
	t := new(TableInfo)
	if err := json.Unmarshal(v, t); err != nil {
		return nil, fmt.Errorf("catalog: corrupt table info: %w", err)
	}
	t.Init()
	return t, nil
}

// ListTables returns the tables of db, sorted by name.
func (c *Catalog) ListTables(ctx context.Context, db *DBInfo) ([]*TableInfo, error) {
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	p := tablePrefix(db.ID)
	pairs, err := c.store.Scan(ctx, p, tablecodec.PrefixNext(p), ts, 0)
	if err != nil {
		return nil, fmt.Errorf("catalog: list tables: %w", err)
	}
	out := make([]*TableInfo, 0, len(pairs))
	for _, kv := range pairs {
		t, err := decodeTable(kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// CreateTable persists t (its ID is assigned here); ERROR 1050 if a table of
// that name exists (nil error when ifNotExists).
func (c *Catalog) CreateTable(ctx context.Context, db *DBInfo, t *TableInfo, ifNotExists bool) error {
	id, err := c.store.AllocID(ctx, 1)
	if err != nil {
		return fmt.Errorf("catalog: alloc table id: %w", err)
	}
	t.ID, t.DBID = int64(id), db.ID
	t.Init()
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = c.write(ctx, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: tableKey(db.ID, t.Name), Value: v}})
	var ke *sql.KeyExistsError
	if errors.As(err, &ke) {
		if ifNotExists {
			return nil
		}
		return errno.New(errno.ErrTableExists, "Table '%s' already exists", t.Name)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.tables[tableName{dbID: db.ID, name: strings.ToLower(t.Name)}] = cachedTable{info: t, loaded: c.now()}
	c.mu.Unlock()
	return nil
}

// DropTable removes a table's catalog entry; ERROR 1051 if it does not exist
// (nil when ifExists). Its rows become unreachable (ids are never reused).
func (c *Catalog) DropTable(ctx context.Context, db *DBInfo, name string, ifExists bool) error {
	if _, err := c.GetTable(ctx, db, name); err != nil {
		var e *errno.Error
		if errors.As(err, &e) && e.Code == errno.ErrNoSuchTable {
			if ifExists {
				return nil
			}
			return errno.New(errno.ErrBadTable, "Unknown table '%s.%s'", db.Name, name)
		}
		return err
	}
	if err := c.write(ctx, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Del, Key: tableKey(db.ID, name)}}); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.tables, tableName{dbID: db.ID, name: strings.ToLower(name)})
	c.mu.Unlock()
	return nil
}

// TruncateTable gives table t a new id in one catalog write, so its old rows
// become unreachable at once whatever their number.
func (c *Catalog) TruncateTable(ctx context.Context, db *DBInfo, t *TableInfo) error {
	id, err := c.store.AllocID(ctx, 1)
	if err != nil {
		return fmt.Errorf("catalog: alloc table id: %w", err)
	}
	nt := *t
	nt.ID = int64(id)
	nt.Init()
	v, err := json.Marshal(&nt)
	if err != nil {
		return err
	}
	if err := c.write(ctx, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: tableKey(db.ID, t.Name), Value: v}}); err != nil {
		return err
	}
	c.mu.Lock()
	c.tables[tableName{dbID: db.ID, name: strings.ToLower(t.Name)}] = cachedTable{info: &nt, loaded: c.now()}
	c.mu.Unlock()
	return nil
}

// UpdateTable replaces the stored definition of table nt (same id and name,
// e.g. with an index added, changed state or dropped). The write conflicts
// with any other change of the table's entry since it was read here, so of
// two concurrent schema changes of one table one fails (retry it); the
// table must still exist under nt.ID, else ERROR 1146.
func (c *Catalog) UpdateTable(ctx context.Context, db *DBInfo, nt *TableInfo) error {
	start, err := c.store.GetTS(ctx)
	if err != nil {
		return fmt.Errorf("catalog: get start ts: %w", err)
	}
	key := tableKey(db.ID, nt.Name)
	v, found, err := c.store.Get(ctx, key, start)
	if err != nil {
		return fmt.Errorf("catalog: read %q: %w", key, err)
	}
	if !found {
		return errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, nt.Name)
	}
	cur, err := decodeTable(v)
	if err != nil {
		return err
	}
	if cur.ID != nt.ID {
		return errno.New(errno.ErrNoSuchTable, "Table '%s.%s' was truncated or recreated during the schema change", db.Name, nt.Name)
	}
	nt.Init()
	nv, err := json.Marshal(nt)
	if err != nil {
		return err
	}
	commit, err := c.store.GetTS(ctx)
	if err != nil {
		return fmt.Errorf("catalog: get commit ts: %w", err)
	}
	if err := c.store.Commit(ctx, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: key, Value: nv}}, start, commit); err != nil {
		return err
	}
	c.mu.Lock()
	c.tables[tableName{dbID: db.ID, name: strings.ToLower(nt.Name)}] = cachedTable{info: nt, loaded: c.now()}
	c.mu.Unlock()
	return nil
}

// Reload drops the cached entry of a table so the next GetTable reads it
// from the KV layer.
func (c *Catalog) Reload(db *DBInfo, name string) {
	c.mu.Lock()
	delete(c.tables, tableName{dbID: db.ID, name: strings.ToLower(name)})
	c.mu.Unlock()
}
