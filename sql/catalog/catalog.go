package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
)

// Catalog is the cached, KV-backed schema. Safe for concurrent use.
type Catalog struct {
	store kv.Storage
	log   *slog.Logger
	lease time.Duration
	epoch time.Time // clock() counts from here

	// validUntil (clock() nanoseconds) ends the lease of the loaded version.
	validUntil atomic.Int64
	refreshMu  sync.Mutex // one version check at a time
	nodeID     string     // this node's row in the schema syncer
	registered bool       // the sync row was written (under refreshMu)

	// refreshTS is the timestamp of the last read that confirmed the
	// loaded version: no schema change committed below it is unknown here.
	refreshTS atomic.Uint64

	mu         sync.RWMutex
	version    int64 // loaded schema version
	reported   int64 // version in the sync row
	reportedAt int64 // clock() of that write
	// rowExpires is when the sync row last written stops counting, in PD's
	// physical milliseconds (0 before the first write).
	rowExpires int64
	gen        uint64               // bumped when the cache is dropped
	history    map[int64]schemaDiff // version -> what it changed
	// Running transactions by the schema version they began at (the
	// metadata lock, version.go); curTxns is the loaded version's.
	txnCounts map[int64]*TxnSchema
	curTxns   atomic.Pointer[TxnSchema]
	dbs       map[string]*model.DBInfo
	tables    map[tableName]*model.TableInfo
	fks       *fkGraph // foreign keys by parent (foreignkey.go)
}

type tableName struct {
	dbID int64
	name string
}

// New returns a Catalog over store.
func New(store kv.Storage) *Catalog {
	return &Catalog{store: store, log: slog.Default(), lease: DefaultLease, nodeID: fmt.Sprintf("%016x", rand.Uint64()), epoch: time.Now(), history: map[int64]schemaDiff{}, txnCounts: map[int64]*TxnSchema{},
		dbs: map[string]*model.DBInfo{}, tables: map[tableName]*model.TableInfo{}}
}

// Store is the storage the catalog reads and writes.
func (c *Catalog) Store() kv.Storage { return c.store }

// MetaKey is the prefix of the catalog's rows of one kind ('m' +
// EncodeBytes(kind)); other packages keep their cluster metadata (e.g. the
// DDL job queue) under kinds of their own.
func MetaKey(kind string) []byte { return metaPrefix(kind) }

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
	v, ok, err := kv.GetAt(ctx, c.store, key, ts)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: read %q: %w", key, err)
	}
	return v, ok, nil
}

// GetDB returns the named database, or ERROR 1049.
func (c *Catalog) GetDB(ctx context.Context, name string) (*model.DBInfo, error) {
	if err := c.ensureValid(ctx); err != nil {
		return nil, err
	}
	lname := strings.ToLower(name)
	c.mu.RLock()
	db, ok := c.dbs[lname]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return db, nil
	}
	v, found, err := c.read(ctx, dbKey(name))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errno.New(errno.ErrBadDB, "Unknown database '%s'", name)
	}
	db = new(model.DBInfo)
	if err := json.Unmarshal(v, db); err != nil {
		return nil, fmt.Errorf("catalog: corrupt database info %q: %w", name, err)
	}
	c.mu.Lock()
	if c.gen == gen { // not read across a version change
		c.dbs[lname] = db
	}
	c.mu.Unlock()
	return db, nil
}

// ListDBs returns every database, sorted by name.
func (c *Catalog) ListDBs(ctx context.Context) ([]*model.DBInfo, error) {
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	p := metaPrefix("DB")
	pairs, err := kv.ScanAt(ctx, c.store, p, tablecodec.PrefixNext(p), ts, 0)
	if err != nil {
		return nil, fmt.Errorf("catalog: list databases: %w", err)
	}
	out := make([]*model.DBInfo, 0, len(pairs))
	for _, kv := range pairs {
		db := new(model.DBInfo)
		if err := json.Unmarshal(kv.Value, db); err != nil {
			return nil, fmt.Errorf("catalog: corrupt database info: %w", err)
		}
		out = append(out, db)
	}
	return out, nil
}

// Step adds a DDL job's writes to a schema change's transaction: the job's
// new state and the DDL owner's fence (package ddl). It gets the
// transaction's start ts and the schema version the change commits; an
// error aborts the change. A nil Step adds nothing.
type Step func(start uint64, version int64) ([]*kvrpcpb.Mutation, error)

func (st Step) add(start uint64, version int64, muts []*kvrpcpb.Mutation) ([]*kvrpcpb.Mutation, error) {
	if st == nil {
		return muts, nil
	}
	more, err := st(start, version)
	if err != nil {
		return nil, err
	}
	return append(muts, more...), nil
}

// CheckDBName reports ERROR 1102 for a name no database may have.
func CheckDBName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "/\\.") {
		return errno.New(errno.ErrWrongDBName, "Incorrect database name '%s'", name)
	}
	return nil
}

// CreateDB creates database db (an id of 0 is allocated here); ERROR 1007
// if it exists (unless ifNotExists).
func (c *Catalog) CreateDB(ctx context.Context, db *model.DBInfo, ifNotExists bool, step Step) error {
	if err := CheckDBName(db.Name); err != nil {
		return err
	}
	if db.ID == 0 {
		id, err := c.store.AllocID(ctx, 1)
		if err != nil {
			return fmt.Errorf("catalog: alloc database id: %w", err)
		}
		db.ID = int64(id)
	}
	name := db.Name
	v, _ := json.Marshal(db)
	err := c.commitDDL(ctx, nil, false, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		return step.add(start, version, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: dbKey(name), Value: v}})
	})
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		if ifNotExists {
			return nil
		}
		return errno.New(errno.ErrDBCreateExists, "Can't create database '%s'; database exists", name)
	}
	return err
}

// UpdateDB replaces the info of database db (ALTER DATABASE: its default
// collation), found by name and id; ERROR 1049 when it is gone.
func (c *Catalog) UpdateDB(ctx context.Context, db *model.DBInfo, step Step) error {
	cur, err := c.GetDB(ctx, db.Name)
	if err != nil {
		return err
	}
	if cur.ID != db.ID {
		return errno.New(errno.ErrBadDB, "Unknown database '%s'", db.Name)
	}
	v, _ := json.Marshal(db)
	return c.commitDDL(ctx, nil, true, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		return step.add(start, version, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: dbKey(db.Name), Value: v}})
	})
}

// DropDB drops a database and its tables' catalog entries; ERROR 1008 if it
// does not exist (unless ifExists). Row data of the dropped tables is left
// for a future GC (ids are never reused, so it is unreachable).
func (c *Catalog) DropDB(ctx context.Context, name string, ifExists bool, step Step) error {
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
	ids := make([]int64, 0, len(tables))
	for _, t := range tables {
		muts = append(muts, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Del, Key: tableKey(db.ID, t.Name)})
		ids = append(ids, t.ID)
	}
	return c.commitDDL(ctx, ids, false, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) { return step.add(start, version, muts) })
}

// GetTable returns the named table, or ERROR 1146.
func (c *Catalog) GetTable(ctx context.Context, db *model.DBInfo, name string) (*model.TableInfo, error) {
	if err := c.ensureValid(ctx); err != nil {
		return nil, err
	}
	k := tableName{dbID: db.ID, name: strings.ToLower(name)}
	c.mu.RLock()
	t, ok := c.tables[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return t, nil
	}
	v, found, err := c.read(ctx, tableKey(db.ID, name))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, name)
	}
	t, err = decodeTable(v)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen { // not read across a version change
		c.tables[k] = t
	}
	c.mu.Unlock()
	return t, nil
}

func decodeTable(v []byte) (*model.TableInfo, error) {
	t := new(model.TableInfo)
	if err := json.Unmarshal(v, t); err != nil {
		return nil, fmt.Errorf("catalog: corrupt table info: %w", err)
	}
	t.Init()
	return t, nil
}

// ListTables returns the tables of db, sorted by name.
func (c *Catalog) ListTables(ctx context.Context, db *model.DBInfo) ([]*model.TableInfo, error) {
	ts, err := c.store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	p := tablePrefix(db.ID)
	pairs, err := kv.ScanAt(ctx, c.store, p, tablecodec.PrefixNext(p), ts, 0)
	if err != nil {
		return nil, fmt.Errorf("catalog: list tables: %w", err)
	}
	out := make([]*model.TableInfo, 0, len(pairs))
	for _, kv := range pairs {
		t, err := decodeTable(kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// CreateTable persists t (an ID of 0 is allocated here); ERROR 1050 if a
// table of that name exists (nil error when ifNotExists).
func (c *Catalog) CreateTable(ctx context.Context, db *model.DBInfo, t *model.TableInfo, ifNotExists bool, step Step) error {
	if t.ID == 0 {
		id, err := c.store.AllocID(ctx, 1)
		if err != nil {
			return fmt.Errorf("catalog: alloc table id: %w", err)
		}
		t.ID = int64(id)
	}
	t.DBID = db.ID
	t.Init()
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = c.commitDDL(ctx, nil, false, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		return step.add(start, version, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: tableKey(db.ID, t.Name), Value: v}})
	})
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		if ifNotExists {
			return nil
		}
		return errno.New(errno.ErrTableExists, "Table '%s' already exists", t.Name)
	}
	return err
}

// DropTable removes a table's catalog entry; ERROR 1051 if it does not exist
// (nil when ifExists). Its rows become unreachable (ids are never reused).
func (c *Catalog) DropTable(ctx context.Context, db *model.DBInfo, name string, ifExists bool, step Step) error {
	t, err := c.GetTable(ctx, db, name)
	if err != nil {
		var e *errno.Error
		if errors.As(err, &e) && e.Code == errno.ErrNoSuchTable {
			if ifExists {
				return nil
			}
			return errno.New(errno.ErrBadTable, "Unknown table '%s.%s'", db.Name, name)
		}
		return err
	}
	return c.commitDDL(ctx, []int64{t.ID}, false, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		return step.add(start, version, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Del, Key: tableKey(db.ID, name)}})
	})
}

// TruncateTable gives table t the new id newID (0: allocated here) in one
// catalog write, so its old rows become unreachable at once whatever their
// number.
func (c *Catalog) TruncateTable(ctx context.Context, db *model.DBInfo, t *model.TableInfo, newID int64, step Step) error {
	if newID == 0 {
		id, err := c.store.AllocID(ctx, 1)
		if err != nil {
			return fmt.Errorf("catalog: alloc table id: %w", err)
		}
		newID = int64(id)
	}
	nt := *t
	nt.ID = newID
	nt.Init()
	v, err := json.Marshal(&nt)
	if err != nil {
		return err
	}
	return c.commitDDL(ctx, []int64{t.ID}, false, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		return step.add(start, version, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: tableKey(db.ID, t.Name), Value: v}})
	})
}

// UpdateTable replaces the stored definition of table nt (same id and name,
// e.g. with an index added, changed state or dropped), as a new schema
// version; the table must still exist under nt.ID, else ERROR 1146. The
// change must be one F1 state step (compatible with the previous version:
// transactions that began under it may commit).
func (c *Catalog) UpdateTable(ctx context.Context, db *model.DBInfo, nt *model.TableInfo, step Step) error {
	return c.updateTable(ctx, db, nt, true, step)
}

// ReplaceTable is UpdateTable as an incompatible version: a transaction
// that began before it and wrote the table fails at COMMIT with 8028 (a
// MODIFY COLUMN's swap of its changing column: rows written under the
// previous version carry the old column, which the new one no longer
// maintains).
func (c *Catalog) ReplaceTable(ctx context.Context, db *model.DBInfo, nt *model.TableInfo, step Step) error {
	return c.updateTable(ctx, db, nt, false, step)
}

func (c *Catalog) updateTable(ctx context.Context, db *model.DBInfo, nt *model.TableInfo, compatible bool, step Step) error {
	nt.Init()
	nv, err := json.Marshal(nt)
	if err != nil {
		return err
	}
	key := tableKey(db.ID, nt.Name)
	return c.commitDDL(ctx, []int64{nt.ID}, compatible, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		v, found, err := kv.GetAt(ctx, c.store, key, start)
		if err != nil {
			return nil, fmt.Errorf("catalog: read %q: %w", key, err)
		}
		if !found {
			return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, nt.Name)
		}
		cur, err := decodeTable(v)
		if err != nil {
			return nil, err
		}
		if cur.ID != nt.ID {
			return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' was truncated or recreated during the schema change", db.Name, nt.Name)
		}
		return step.add(start, version, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: key, Value: nv}})
	})
}

// Reload drops the cached entry of a table so the next GetTable reads it
// from the KV layer.
func (c *Catalog) Reload(db *model.DBInfo, name string) {
	c.mu.Lock()
	delete(c.tables, tableName{dbID: db.ID, name: strings.ToLower(name)})
	c.mu.Unlock()
}

// TableUpdate is a table's new definition (same id and name) written with
// another schema change.
type TableUpdate struct {
	DB    *model.DBInfo
	Table *model.TableInfo
}

// RenameTable moves table t of db to newDB under newName (RENAME TABLE,
// ALTER TABLE ... RENAME TO), keeping its id, so its rows and indexes stay
// where they are; ERROR 1050 if newName exists there. The tables in also
// (children whose foreign keys follow the rename; an entry for t itself
// gives its new foreign keys) are rewritten in the same version. The diff
// is not compatible: a transaction that wrote these tables fails with
// 8028.
func (c *Catalog) RenameTable(ctx context.Context, db *model.DBInfo, t *model.TableInfo, newDB *model.DBInfo, newName string, also []TableUpdate, step Step) error {
	nt := t.Clone()
	ids := []int64{t.ID}
	var more []*kvrpcpb.Mutation
	for _, u := range also {
		if u.Table.ID == t.ID {
			nt.ForeignKeys = u.Table.ForeignKeys
			continue
		}
		u.Table.Init()
		v, err := json.Marshal(u.Table)
		if err != nil {
			return err
		}
		ids = append(ids, u.Table.ID)
		more = append(more, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: tableKey(u.DB.ID, u.Table.Name), Value: v})
	}
	nt.Name, nt.DBID = newName, newDB.ID
	nt.Init()
	v, err := json.Marshal(nt)
	if err != nil {
		return err
	}
	oldKey := tableKey(db.ID, t.Name)
	err = c.commitDDL(ctx, ids, false, func(start uint64, version int64) ([]*kvrpcpb.Mutation, error) {
		cur, found, err := kv.GetAt(ctx, c.store, oldKey, start)
		if err != nil {
			return nil, fmt.Errorf("catalog: read %q: %w", oldKey, err)
		}
		if !found {
			return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, t.Name)
		}
		if ct, err := decodeTable(cur); err != nil {
			return nil, err
		} else if ct.ID != t.ID {
			return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' was truncated or recreated during the rename", db.Name, t.Name)
		}
		muts := []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Del, Key: oldKey}, {Op: kvrpcpb.Op_Insert, Key: tableKey(newDB.ID, newName), Value: v}}
		if db.ID == newDB.ID && strings.EqualFold(t.Name, newName) {
			muts = []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: oldKey, Value: v}} // a change of letter case
		}
		return step.add(start, version, append(muts, more...))
	})
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		return errno.New(errno.ErrTableExists, "Table '%s' already exists", newName)
	}
	return err
}
