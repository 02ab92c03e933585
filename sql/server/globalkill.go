package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/session"
)

// Global KILL and CLUSTER_PROCESSLIST. A node registered with PD
// (Config.Registry) holds a server id, carried by its connection ids
// (connid.go), and publishes its status address with it. KILL of an id
// with another node's server id is sent to that node's status port
// (POST /internal/kill), which judges it exactly as a local KILL with the
// requester's user and SUPER passed along; CLUSTER_PROCESSLIST asks every
// registered node (POST /internal/processlist) in parallel, each bounded
// by peerTimeout. Both endpoints are POST so that security.Guard protects
// them as PD's state-changing API: with cluster TLS only a peer presenting
// a certificate of the cluster CA is answered (the list carries statement
// text); without it, like PD's API, they answer everyone who can reach
// the status port.

// NodeRegistry is PD's SQL node registry (pdclient.Client).
type NodeRegistry interface {
	// SQLNodeHeartbeat registers (id 0, lease 0) or renews the node's
	// server id for ttl (0: releases it); see pdpb.proto.
	SQLNodeHeartbeat(ctx context.Context, node *pdpb.SQLNode, lease int64, ttl time.Duration) (serverID uint64, leaseID int64, err error)
	// SQLNodes lists the live nodes.
	SQLNodes(ctx context.Context) ([]*pdpb.SQLNode, error)
}

const (
	// serverIDTTL is the lease of the node's server id (TiDB's is 12 s);
	// it is renewed every serverIDTTL/5.
	serverIDTTL = 10 * time.Second
	// peerTimeout bounds one request to another SQL node.
	peerTimeout = 3 * time.Second
	// InternalPrefix is the status port path of the peer endpoints.
	InternalPrefix = "/internal/"
)

// killReplyJSON is POST /internal/kill's answer (Code 0: done, else the
// MySQL error the KILL gets); the body is a session.KillRequest.
type killReplyJSON struct {
	Code uint16 `json:"code,omitempty"`
	Msg  string `json:"msg,omitempty"`
}

// nodeRecord is what the node publishes in the registry.
func (s *Server) nodeRecord() *pdpb.SQLNode {
	return &pdpb.SQLNode{ServerId: s.serverID.Load(), SqlAddr: s.addr.String(), StatusAddr: s.cfg.StatusAddr}
}

// register obtains the node's server id from PD, retrying until ctx ends;
// the SQL address is known once the listener is open.
func (s *Server) register(ctx context.Context) (lease int64, err error) {
	node := s.nodeRecord()
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		id, l, err := s.cfg.Registry.SQLNodeHeartbeat(ctx, node, 0, serverIDTTL)
		if err == nil {
			s.serverID.Store(id)
			s.log.Info("sql node registered", "server_id", id, "status_addr", s.cfg.StatusAddr)
			return l, nil
		}
		s.log.Warn("registering with pd failed; retrying (connection ids need a server id)", "err", err)
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("server: register with pd: %w", err)
		case <-time.After(backoff):
		}
	}
}

// keepRegistered renews the server id until ctx ends and returns the
// last lease. When PD answers a new id (the lease expired while PD was
// unreachable and another node took the old one), connections still
// carrying the old id are closed: a KILL of their id would reach the other
// node.
func (s *Server) keepRegistered(ctx context.Context, lease int64) int64 {
	t := time.NewTicker(serverIDTTL / 5)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return lease
		case <-t.C:
		}
		old := s.serverID.Load()
		rctx, cancel := context.WithTimeout(ctx, serverIDTTL/5)
		id, l, err := s.cfg.Registry.SQLNodeHeartbeat(rctx, s.nodeRecord(), lease, serverIDTTL)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("renewing the server id failed", "server_id", old, "err", err)
			}
			continue
		}
		lease = l
		if id != old {
			s.serverID.Store(id)
			n := s.closeServerID(old)
			s.log.Warn("server id lost while pd was unreachable; new connections get a new one, and the connections with the old id were closed",
				"old_server_id", old, "server_id", id, "closed", n)
		}
	}
}

// unregister releases the server id once the node's connections are
// gone, so no other node can reuse it while they live.
func (s *Server) unregister(ctx context.Context, lease int64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	sid := s.serverID.Load()
	if _, _, err := s.cfg.Registry.SQLNodeHeartbeat(rctx, s.nodeRecord(), lease, 0); err != nil {
		s.log.Warn("releasing the server id failed; it is free once its lease expires", "server_id", sid, "ttl", serverIDTTL, "err", err)
	}
}

// closeServerID closes the connections whose id carries server id sid.
func (s *Server) closeServerID(sid uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, c := range s.byID {
		if got, _, _ := splitConnID(id); got == sid {
			c.shutdown()
			n++
		}
	}
	return n
}

// instance is the node's INSTANCE in CLUSTER_PROCESSLIST: its status
// address (TiDB's), or its SQL address when it has none.
func (s *Server) instance() string {
	if s.cfg.StatusAddr != "" {
		return s.cfg.StatusAddr
	}
	return s.addr.String()
}

// Kill implements session.Processes: r runs here when r.ID is this node's,
// else on the node whose server id r.ID carries.
func (s *Server) Kill(ctx context.Context, r session.KillRequest) error {
	sid, _, ok := splitConnID(r.ID)
	if !ok {
		countKill("local", errUnknownThread(r.ID))
		return errUnknownThread(r.ID)
	}
	if sid == s.serverID.Load() || s.cfg.Registry == nil {
		err := s.killLocal(r)
		countKill("local", err)
		return err
	}
	err := s.killRemote(ctx, sid, r)
	countKill("remote", err)
	return err
}

// killRemote sends r to the node holding server id sid.
func (s *Server) killRemote(ctx context.Context, sid uint64, r session.KillRequest) error {
	nodes, err := s.cfg.Registry.SQLNodes(ctx)
	if err != nil {
		return errno.New(errno.ErrUnknown, "KILL %d: cannot list the SQL nodes from PD (%v); retry once PD answers", r.ID, err)
	}
	var target *pdpb.SQLNode
	for _, n := range nodes {
		if n.GetServerId() == sid {
			target = n
		}
	}
	if target == nil {
		return errUnknownThread(r.ID) // no live node has the id
	}
	var reply killReplyJSON
	err = s.peerCall(ctx, target.GetStatusAddr(), "kill", r, &reply)
	log := s.log.With("kill_id", r.ID, "query", r.Query, "user", r.User, "server_id", sid, "node", target.GetStatusAddr())
	if err != nil {
		log.Warn("remote kill failed", "err", err)
		return errno.New(errno.ErrUnknown, "KILL %d: SQL node %s (server id %d) owns the connection but did not answer: %v; retry, or check that node", r.ID, target.GetStatusAddr(), sid, err)
	}
	if reply.Code != 0 {
		log.Info("remote kill refused", "code", reply.Code, "msg", reply.Msg)
		return errno.New(reply.Code, "%s", reply.Msg)
	}
	log.Info("remote kill done")
	return nil
}

// ClusterList implements session.Processes: this node's connections and,
// in parallel, every other live node's, each node bounded by peerTimeout;
// the nodes that did not answer become warnings.
func (s *Server) ClusterList(ctx context.Context) ([]session.InstanceProcess, []string) {
	local := func() []session.InstanceProcess {
		return withInstance(s.instance(), s.List())
	}
	if s.cfg.Registry == nil {
		return local(), nil
	}
	nodes, err := s.cfg.Registry.SQLNodes(ctx)
	if err != nil {
		return local(), []string{fmt.Sprintf("CLUSTER_PROCESSLIST: cannot list the SQL nodes from PD (%v); only this node's connections are shown", err)}
	}
	var (
		mu    sync.Mutex
		out   []session.InstanceProcess
		warns []string
		wg    sync.WaitGroup
	)
	me := s.serverID.Load()
	for _, n := range nodes {
		if n.GetServerId() == me {
			continue // answered from List, even if PD lost our key
		}
		wg.Go(func() {
			var procs []session.ProcessInfo
			err := s.peerCall(ctx, n.GetStatusAddr(), "processlist", struct{}{}, &procs)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				warns = append(warns, fmt.Sprintf("CLUSTER_PROCESSLIST: SQL node %s (server id %d) did not answer: %v; its connections are missing", n.GetStatusAddr(), n.GetServerId(), err))
				return
			}
			out = append(out, withInstance(n.GetStatusAddr(), procs)...)
		})
	}
	wg.Wait()
	return append(local(), out...), warns
}

func withInstance(inst string, procs []session.ProcessInfo) []session.InstanceProcess {
	out := make([]session.InstanceProcess, len(procs))
	for i, p := range procs {
		out[i] = session.InstanceProcess{Instance: inst, ProcessInfo: p}
	}
	return out
}

// peerCall POSTs in as JSON to another SQL node's /internal/<what> and
// decodes the answer into out, within peerTimeout
// (strata_sql_peer_request_seconds).
func (s *Server) peerCall(ctx context.Context, addr, what string, in, out any) (err error) {
	defer func(start time.Time) {
		result := "ok"
		if err != nil {
			result = "error"
		}
		peerSeconds.WithLabelValues(what, result).Observe(time.Since(start).Seconds())
	}(time.Now())
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Security.Scheme()+"://"+addr+InternalPrefix+what, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.peers.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

// InternalHandler serves the endpoints other SQL nodes call on this one's
// status port (mount it at InternalPrefix):
//
//	POST /internal/processlist   this node's connections (JSON)
//	POST /internal/kill          run a session.KillRequest here
//
// Guarded as PD's state-changing API (security.Guard): with cluster TLS
// only callers with a certificate of the cluster CA are answered.
func (s *Server) InternalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+InternalPrefix+"processlist", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.List())
	})
	mux.HandleFunc("POST "+InternalPrefix+"kill", func(w http.ResponseWriter, r *http.Request) {
		var kr session.KillRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&kr); err != nil {
			http.Error(w, "bad kill request: "+err.Error(), http.StatusBadRequest)
			return
		}
		err := s.killLocal(kr)
		countKill("peer", err)
		s.log.Info("kill from another sql node", "kill_id", kr.ID, "query", kr.Query, "user", kr.User, "remote", r.RemoteAddr, "err", err)
		var reply killReplyJSON
		if err != nil {
			e := errno.FromError(err)
			reply = killReplyJSON{Code: e.Code, Msg: e.Msg}
		}
		writeJSON(w, reply)
	})
	return s.guard.Wrap(mux)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// countKill counts one KILL (strata_sql_kill_total) by where it ran and
// its outcome.
func countKill(scope string, err error) {
	outcome := "ok"
	var e *errno.Error
	switch {
	case err == nil:
	case errors.As(err, &e) && e.Code == 1094:
		outcome = "unknown_id"
	case errors.As(err, &e) && e.Code == 1095:
		outcome = "denied"
	default:
		outcome = "error"
	}
	killTotal.WithLabelValues(scope, outcome).Inc()
}

// newGuard is the internal endpoints' guard: cluster TLS when configured.
func newGuard(sec *security.TLS) *security.Guard {
	g, _ := security.NewGuard(sec, "") // no token file: cannot fail
	return g
}
