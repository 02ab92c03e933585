package server_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/server"
)

// gatedStore holds every transaction Commit, while block is set, until
// release is closed or the statement's context ends; entered says one is
// held.
type gatedStore struct {
	kv.Storage
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

type gatedTxn struct {
	kv.Txn
	g *gatedStore
}

func (g *gatedStore) Begin(ctx context.Context, opts kv.TxnOptions) (kv.Txn, error) {
	t, err := g.Storage.Begin(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &gatedTxn{Txn: t, g: g}, nil
}

func (t *gatedTxn) Commit(ctx context.Context) error {
	g := t.g
	if g.block.Load() {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			_ = t.Txn.Rollback(context.Background())
			return ctx.Err()
		}
	}
	return t.Txn.Commit(ctx)
}

// TestShutdownDrainsStatements: on shutdown the SQL node stops accepting at
// once, closes idle connections, lets a statement in flight finish (up to
// ShutdownTimeout, after which it is cancelled) and then returns.
func TestShutdownDrainsStatements(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		release bool // let the held commit finish
		wantErr bool // the in-flight statement fails
	}{
		{name: "statement finishes", timeout: 20 * time.Second, release: true},
		{name: "statement cut off at timeout", timeout: 200 * time.Millisecond, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &gatedStore{Storage: newTestStore(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
			srv, err := server.New(server.Config{
				Addr: "127.0.0.1:0", Store: store, ShutdownTimeout: tc.timeout,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- srv.Run(ctx) }()
			<-srv.Ready()
			addr := srv.Addr().String()

			db, err := sql.Open("mysql", "root:@tcp("+addr+")/")
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec("CREATE DATABASE d")
			require.NoError(t, err)
			_, err = db.Exec("CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10))")
			require.NoError(t, err)
			idle, err := db.Conn(context.Background())
			require.NoError(t, err)
			require.NoError(t, idle.PingContext(context.Background()))
			busy, err := db.Conn(context.Background())
			require.NoError(t, err)

			store.block.Store(true)
			stmtErr := make(chan error, 1)
			go func() {
				_, err := busy.ExecContext(context.Background(), "INSERT INTO d.t VALUES (1, 'a')")
				stmtErr <- err
			}()
			<-store.entered // the INSERT is in flight, inside its commit
			shutdownAt := time.Now()
			cancel()

			// New connections are refused while the statement still runs.
			require.Eventually(t, func() bool {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					return true
				}
				c.Close()
				return false
			}, 10*time.Second, time.Millisecond, "listener still accepting after shutdown")
			// The idle connection is closed (a command racing the shutdown
			// is still answered first).
			require.Eventually(t, func() bool { return idle.PingContext(context.Background()) != nil },
				10*time.Second, time.Millisecond, "idle connection still open after shutdown")
			select {
			case err := <-done:
				require.FailNow(t, "server returned while a statement was running", "%v", err)
			default:
			}

			if tc.release {
				close(store.release)
			}
			err = <-stmtErr
			require.NoError(t, <-done)
			took := time.Since(shutdownAt)
			now, tsErr := store.GetTS(context.Background())
			require.NoError(t, tsErr)
			rows, scanErr := kv.ScanAt(context.Background(), store, []byte("t"), []byte("u"), now, 0)
			require.NoError(t, scanErr)
			if tc.wantErr {
				require.Error(t, err)
				require.GreaterOrEqual(t, took, tc.timeout)
				require.Empty(t, rows, "the cancelled statement wrote nothing")
				return
			}
			require.NoError(t, err, "the statement in flight at shutdown completes")
			require.Less(t, took, tc.timeout)
			require.Len(t, rows, 1, "the row was committed")
		})
	}
}
