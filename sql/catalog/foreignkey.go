package catalog

import (
	"context"
	"strings"

	"github.com/stratadb/strata/sql/model"
)

// FKRef is one foreign key seen from its parent: the child table (in
// database ChildDB) and its FK.
type FKRef struct {
	ChildDB string
	Child   *model.TableInfo
	FK      *model.FKInfo
}

// fkGraph is every foreign key of the cluster by parent table id, built
// from one listing of the catalog.
type fkGraph struct {
	gen       uint64 // the cache generation it was built in
	referrers map[int64][]FKRef
}

// Referrers returns the foreign keys that reference table t (t's children; t itself for a self-referencing one), as the loaded
// schema version has them. The graph is built from a listing of every
// table once per schema version this node loads, on first use; a child
// whose parent does not exist (created under foreign_key_checks=0) counts
// once the parent does. The returned slice must not be modified.
func (c *Catalog) Referrers(ctx context.Context, t *model.TableInfo) ([]FKRef, error) {
	if err := c.ensureValid(ctx); err != nil {
		return nil, err
	}
	c.mu.RLock()
	g, gen := c.fks, c.gen
	c.mu.RUnlock()
	if g == nil || g.gen != gen {
		var err error
		if g, err = c.buildFKGraph(ctx, gen); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.gen == gen {
			c.fks = g
		}
		c.mu.Unlock()
	}
	return g.referrers[t.ID], nil
}

func (c *Catalog) buildFKGraph(ctx context.Context, gen uint64) (*fkGraph, error) {
	g := &fkGraph{gen: gen, referrers: map[int64][]FKRef{}}
	dbs, err := c.ListDBs(ctx)
	if err != nil {
		return nil, err
	}
	type child struct {
		db string
		t  *model.TableInfo
	}
	ids := map[string]int64{} // lower(db) "." lower(table) -> id
	var children []child
	for _, db := range dbs {
		tables, err := c.ListTables(ctx, db)
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			ids[strings.ToLower(db.Name+"."+t.Name)] = t.ID
			if len(t.ForeignKeys) > 0 {
				children = append(children, child{db.Name, t})
			}
		}
	}
	for _, ch := range children {
		for _, fk := range ch.t.ForeignKeys {
			if id, ok := ids[strings.ToLower(fk.RefSchema+"."+fk.RefTable)]; ok {
				g.referrers[id] = append(g.referrers[id], FKRef{ChildDB: ch.db, Child: ch.t, FK: fk})
			}
		}
	}
	return g, nil
}
