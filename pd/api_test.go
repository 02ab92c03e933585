package pd_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/pki"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/pd"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// TestAPI drives the HTTP API of an in-process PD leader with three
// registered stores and the bootstrapped region: PD-shaped answers, config
// round trips, and bad input answered 4xx with a message.
func TestAPI(t *testing.T) {
	srv := pdtest.New(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := pdclient.New(ctx, []string{srv.Addr})
	require.NoError(t, err)
	defer cli.Close()
	for _, id := range []uint64{1, 2, 3} {
		require.NoError(t, cli.PutStore(ctx, &metapb.Store{Id: id, Address: "127.0.0.1:1",
			Labels: []*metapb.StoreLabel{{Key: "zone", Value: "z" + itoa(id)}}}))
		_, err := cli.StoreHeartbeat(ctx, &pdpb.StoreHeartbeatRequest{Stats: &pdpb.StoreStats{StoreId: id, Capacity: 100, Available: 60}})
		require.NoError(t, err)
	}
	r, _, err := cli.GetRegion(ctx, []byte("k"))
	require.NoError(t, err)
	_, err = cli.RegionHeartbeat(ctx, &pdpb.RegionHeartbeatRequest{Region: r, Leader: r.Peers[0], Term: 6, ApproximateSize: 3 << 20})
	require.NoError(t, err)

	h := httptest.NewServer(srv.Server().APIHandler())
	defer h.Close()
	call := func(method, path, body string) (int, string) { return apiCall(t, h.URL, method, path, body) }
	for _, tc := range []struct {
		method, path, body string
		code               int
		contains           string
	}{
		{"GET", "stores", "", 200, `"state_name": "Up"`},
		{"GET", "stores", "", 200, `"available": 60`},
		{"GET", "store/2", "", 200, `"value": "z2"`},
		{"GET", "store/2", "", 200, `"region_count": 1`},
		{"GET", "store/9", "", 404, "store 9 not found"},
		{"GET", "store/x", "", 400, "is not a number"},
		{"GET", "regions", "", 200, `"count": 1`},
		{"GET", "regions?limit=x", "", 400, "limit"},
		{"GET", "region/id/" + itoa(r.Id), "", 200, `"approximate_size": 3`},
		{"GET", "region/id/999", "", 404, "region 999 not found"},
		{"GET", "region/key/abc", "", 200, `"role_name": "Voter"`},
		{"GET", "region/key/zz?format=hex", "", 400, "not hex"},
		{"GET", "operators", "", 200, "[]"},
		{"POST", "operators", `{"name":"frobnicate","region_id":` + itoa(r.Id) + `}`, 400, "unknown operator"},
		{"POST", "operators", `{"name":"transfer-leader","region_id":` + itoa(r.Id) + `,"to_store_id":9}`, 400, "no voter on store 9"},
		{"POST", "operators", `{"name":"add-peer","region_id":` + itoa(r.Id) + `,"store_id":2}`, 400, "already has a peer"},
		{"POST", "operators", `not json`, 400, "bad operator request"},
		{"POST", "operators", `{"name":"transfer-peer","region_id":` + itoa(r.Id) + `,"from_store_id":9,"to_store_id":2}`, 400, "no peer on store 9"},
		{"POST", "operators", `{"name":"transfer-peer","region_id":` + itoa(r.Id) + `,"from_store_id":1,"to_store_id":2}`, 400, "already has a peer on store 2"},
		{"POST", "operators", `{"name":"transfer-leader","region_id":` + itoa(r.Id) + `,"to_store_id":2}`, 200, "created"},
		{"GET", "operators/" + itoa(r.Id), "", 200, "admin-transfer-leader"},
		{"POST", "operators", `{"name":"transfer-leader","region_id":` + itoa(r.Id) + `,"to_store_id":3}`, 409, "already has an operator"},
		{"DELETE", "operators/" + itoa(r.Id), "", 200, "removed"},
		{"POST", "operators", `{"name":"split-region","region_id":` + itoa(r.Id) + `}`, 400, "needs keys"},
		{"POST", "operators", `{"name":"split-region","region_id":` + itoa(r.Id) + `,"keys":["zz"]}`, 400, "not hex"},
		{"POST", "operators", `{"name":"split-region","region_id":` + itoa(r.Id) + `,"keys":[""]}`, 400, "not strictly inside"},
		{"POST", "operators", `{"name":"split-region","region_id":` + itoa(r.Id) + `,"keys":["6D"]}`, 200, "created"},
		{"GET", "operators/" + itoa(r.Id), "", 200, "split region at 6D"},
		{"DELETE", "operators/" + itoa(r.Id), "", 200, "removed"},
		{"DELETE", "operators/" + itoa(r.Id), "", 404, "no operator"},
		{"GET", "schedulers", "", 200, "balance-region-scheduler"},
		{"DELETE", "schedulers/balance-region-scheduler", "", 200, "removed"},
		{"DELETE", "schedulers/nope", "", 404, "not found"},
		{"POST", "schedulers", `{"name":"nope"}`, 400, "unknown scheduler"},
		{"POST", "config", `{"max-store-down-time":"20s","store-limit":30}`, 200, "updated"},
		{"POST", "config", `{"location-labels":["zone","host"]}`, 200, "updated"},
		{"GET", "config", "", 200, `"location-labels": [`},
		{"GET", "config", "", 200, `"max-store-down-time": "20s"`},
		{"GET", "config", "", 200, `"disabled-schedulers": [` + "\n" + `      "balance-region-scheduler"`},
		{"POST", "config", `{"max-store-down-time":"soon"}`, 400, "bad duration"},
		{"POST", "config", `{"max-replicas":0}`, 200, "updated"}, // 0 is the default (3)
		{"POST", "config", `{"max-replicas":12}`, 400, "max-replicas must be 1..9"},
		{"POST", "config", `{"no-such-key":1}`, 400, "unknown field"},
		{"POST", "config", `{"store-limit":-1}`, 400, "store-limit must be > 0"},
		{"GET", "affinity-groups", "", 200, "[]"},
		{"POST", "affinity-groups", `{"table_ids":[42, 43]}`, 200, "created"},
		{"POST", "affinity-groups", `{"table_ids":[]}`, 400, "table_ids"},
		{"POST", "affinity-groups", `{"table_ids":[-1]}`, 400, "affinity-tables must be distinct positive"},
		{"GET", "config", "", 200, `"affinity-tables": [` + "\n" + `      42,` + "\n" + `      43`},
		{"GET", "affinity-groups", "", 200, `"id": "table-42"`},
		{"GET", "affinity-groups/43", "", 200, `"phase": "pending"`}, // no regions of table 43
		{"GET", "affinity-groups/x", "", 400, "not a positive number"},
		{"DELETE", "affinity-groups/43", "", 200, "removed"},
		{"DELETE", "affinity-groups/43", "", 404, "table 43 has no affinity group"},
		{"GET", "schedulers", "", 200, "affinity-scheduler"},
		{"DELETE", "store/9", "", 404, "store 9 not found"},
		{"GET", "members", "", 200, `"leader"`},
		{"GET", "health", "", 200, `"health": true`},
	} {
		code, body := call(tc.method, tc.path, tc.body)
		require.Equal(t, tc.code, code, "%s %s %s: %s", tc.method, tc.path, tc.body, body)
		require.Contains(t, body, tc.contains, "%s %s %s", tc.method, tc.path, tc.body)
	}
	// DELETE store: Offline, then (it holds a replica) not yet Tombstone.
	code, body := call("DELETE", "store/3", "")
	require.Equal(t, 200, code, body)
	var st struct {
		Store struct {
			StateName string `json:"state_name"`
		} `json:"store"`
	}
	_, body = call("GET", "store/3", "")
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, "Offline", st.Store.StateName)
	// A restart of the store does not bring it back Up.
	require.NoError(t, cli.PutStore(ctx, &metapb.Store{Id: 3, Address: "127.0.0.1:1"}))
	_, body = call("GET", "store/3", "")
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, "Offline", st.Store.StateName)
}

func itoa(n uint64) string { return string(must(json.Marshal(n))) }

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestAPIToken: with --http-token-file, state-changing API calls need the
// bearer token (401 with a JSON error saying so otherwise); GETs stay open.
func TestAPIToken(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	srv := pdtest.NewWith(t, 1, func(c *pd.Config) { c.HTTPTokenFile = token })
	h := httptest.NewServer(srv.Server().APIHandler())
	defer h.Close()
	for _, tc := range []struct {
		method, path, body, auth string
		code                     int
		contains                 string
	}{
		{"GET", "config", "", "", 200, "max-store-down-time"},
		{"GET", "members", "", "", 200, "pd1"},
		{"POST", "config", "{}", "", 401, "--http-token-file"},
		{"POST", "config", "{}", "Bearer wrong", 401, "needs authentication"},
		{"DELETE", "store/1", "", "", 401, "Authorization: Bearer"},
		{"DELETE", "members/name/pd1", "", "Basic czNjcmV0", 401, "needs authentication"},
		{"POST", "config", "{}", "Bearer s3cret", 200, "updated"},
		{"DELETE", "store/9", "", "Bearer s3cret", 404, "store 9 not found"},
	} {
		code, body := apiCall(t, h.URL, tc.method, tc.path, tc.body, tc.auth)
		require.Equal(t, tc.code, code, "%s %s: %s", tc.method, tc.path, body)
		require.Contains(t, body, tc.contains, "%s %s", tc.method, tc.path)
	}
}

// TestConfigTLSNeedsHTTPS: with cluster TLS the embedded etcd's URLs must
// be https.
func TestConfigTLSNeedsHTTPS(t *testing.T) {
	dir := t.TempDir()
	_, f, err := pki.NewFiles(dir, "pd", "pd", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	sec, err := security.New(security.Config{CA: f.CA, Cert: f.Cert, Key: f.Key}, "pd")
	require.NoError(t, err)
	cfg := pd.Config{DataDir: dir, Addr: "127.0.0.1:0", PeerURL: "http://127.0.0.1:1", ClientURL: "https://127.0.0.1:2", Security: sec}
	require.ErrorContains(t, cfg.Validate(), `with cluster TLS the peer url must be https://, got "http://127.0.0.1:1"`)
	cfg = pd.Config{DataDir: dir, Addr: "127.0.0.1:0", PeerURL: "https://127.0.0.1:1", ClientURL: "https://127.0.0.1:2", Security: sec}
	require.NoError(t, cfg.Validate())
}
