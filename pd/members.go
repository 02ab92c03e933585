package pd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// PD membership through the HTTP API (TiDB's PD: POST /members is done with
// pd-ctl / etcdctl member add, DELETE /members/name/{name}), and forwarding
// of leader-only API requests from a follower to the leader.

// forwardedHeader marks a request a follower forwarded: the receiver never
// forwards it again (no loops while the leadership moves).
const forwardedHeader = "X-Strata-Pd-Forwarded"

// forward sends a leader-only request to the PD leader's HTTP API and
// copies its answer back; false (nothing written) when the leader or its
// HTTP address is unknown.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get(forwardedHeader) != "" {
		return false
	}
	_, leader, err := s.members(r.Context())
	if err != nil || leader == nil || leader.GetName() == s.cfg.Name {
		return false
	}
	resp, err := s.cli.Get(r.Context(), prefixMemberHTTP+leader.GetName())
	if err != nil || len(resp.Kvs) == 0 {
		return false
	}
	target := s.cfg.Security.Scheme() + "://" + string(resp.Kvs[0].Value) + r.URL.RequestURI()
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, r.Body)
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	req.Header.Set(forwardedHeader, s.cfg.Name)
	// The request passed this member's guard; the leader's lets it
	// through on our client certificate or the caller's token.
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	start := time.Now()
	ans, err := s.httpCli.Do(req)
	if err != nil {
		apiForwarded.WithLabelValues("error").Inc()
		writeJSON(w, http.StatusBadGateway, map[string]string{
			"error": fmt.Sprintf("this PD member is not the leader and forwarding to the leader %q failed: %v; retry, or ask the leader", leader.GetName(), err)})
		return true
	}
	defer ans.Body.Close()
	for _, h := range []string{"Content-Type", "Content-Length"} {
		if v := ans.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(ans.StatusCode)
	_, _ = io.Copy(w, ans.Body)
	apiForwarded.WithLabelValues("ok").Inc()
	apiForwardSeconds.Observe(time.Since(start).Seconds())
	return true
}

// apiAddMember adds a member to the etcd cluster: {"name": "pd4",
// "peer_urls": ["http://10.0.0.4:2380"]}. The answer carries the
// initial-cluster (and state "existing") to start the new member with.
func (s *Server) apiAddMember(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name     string   `json:"name"`
		PeerURLs []string `json:"peer_urls"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("bad member request (want {\"name\": ..., \"peer_urls\": [...]}): %v", err)})
		return
	}
	if req.Name == "" || strings.ContainsAny(req.Name, "=,") || len(req.PeerURLs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a member needs a name (no '=' or ',') and at least one peer URL"})
		return
	}
	for _, u := range req.PeerURLs {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("peer URL %q is not http(s)://host:port", u)})
			return
		}
	}
	if ms, err := s.etcdMembers(r.Context()); err == nil {
		for _, m := range ms {
			if m.Name == req.Name {
				writeJSON(w, http.StatusConflict, map[string]string{"error": fmt.Sprintf("member %q already exists", req.Name)})
				return
			}
		}
	}
	resp, err := s.cli.MemberAdd(r.Context(), req.PeerURLs)
	if err != nil {
		writeMemberError(w, "add", err)
		return
	}
	var initial []string
	for _, m := range resp.Members {
		name := m.Name
		if m.ID == resp.Member.ID {
			name = req.Name
		}
		if name == "" {
			continue // added earlier, not started yet
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	sort.Strings(initial)
	s.log.Info("pd member added", "name", req.Name, "id", resp.Member.ID, "peer_urls", req.PeerURLs)
	writeJSON(w, http.StatusOK, map[string]any{
		"name": req.Name, "member_id": resp.Member.ID,
		"initial_cluster": strings.Join(initial, ","), "initial_cluster_state": "existing",
	})
}

// apiRemoveMember removes a member from the etcd cluster by name
// (members/name/{name}) or id (members/id/{id}), and its PD records.
func (s *Server) apiRemoveMember(w http.ResponseWriter, r *http.Request) {
	ms, err := s.etcdMembers(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	var victim *etcdserverpb.Member
	for _, m := range ms {
		if (r.PathValue("name") != "" && m.Name == r.PathValue("name")) ||
			(r.PathValue("id") != "" && strconv.FormatUint(m.ID, 10) == r.PathValue("id")) {
			victim = m
		}
	}
	if victim == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no PD member %s", r.PathValue("name")+r.PathValue("id"))})
		return
	}
	if len(ms) == 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "cannot remove the last PD member"})
		return
	}
	if _, err := s.cli.MemberRemove(r.Context(), victim.ID); err != nil {
		writeMemberError(w, "remove", err)
		return
	}
	if victim.Name != "" {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		for _, k := range []string{prefixMembers + victim.Name, prefixMemberHTTP + victim.Name} {
			if _, err := s.cli.Delete(ctx, k); err != nil {
				s.log.Warn("pd member removed; its record stays", "key", k, "err", err)
			}
		}
	}
	s.log.Info("pd member removed", "name", victim.Name, "id", victim.ID)
	writeJSON(w, http.StatusOK, "The member is removed.")
}

// writeMemberError answers a failed etcd member change: 503 when etcd
// refuses it for now (a member connected for less than 5 s, or one down:
// the change could cost the quorum), else 500.
func writeMemberError(w http.ResponseWriter, op string, err error) {
	if strings.Contains(err.Error(), "unhealthy cluster") {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf(
			"etcd member %s refused: every member must be up and connected for 5 s first (%v); retry", op, err)})
		return
	}
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": fmt.Sprintf("etcd member %s: %v", op, err)})
}

// etcdMembers lists the etcd cluster's members.
func (s *Server) etcdMembers(ctx context.Context) ([]*etcdserverpb.Member, error) {
	resp, err := s.cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("pd: etcd member list: %w", err)
	}
	return resp.Members, nil
}
